-- The expire_credentials sweep: deletes credentials that can no longer be used, a
-- bounded batch per statement (short transactions), by the database clock. Rows
-- locked by a request in flight (an acceptance, a sign-in) are skipped and taken
-- at the next pass.

-- name: LoginSessionDeleteExpired :execrows
DELETE FROM login_session
WHERE id IN (
    SELECT id FROM login_session
    WHERE expires_at <= now() OR revoked_at IS NOT NULL
    LIMIT @batch
    FOR UPDATE SKIP LOCKED);

-- name: MailLinkDeleteSpent :execrows
-- Expired, used or revoked mail links.
DELETE FROM mail_link
WHERE id IN (
    SELECT id FROM mail_link
    WHERE expires_at <= now() OR used_at IS NOT NULL OR revoked_at IS NOT NULL
    LIMIT @batch
    FOR UPDATE SKIP LOCKED);

-- name: InvitationDeleteLapsed :execrows
-- Unaccepted invitations that expired or were revoked. Accepted invitations are
-- kept: they record how a member came in.
DELETE FROM invitation
WHERE id IN (
    SELECT id FROM invitation
    WHERE accepted_at IS NULL AND (expires_at <= now() OR revoked_at IS NOT NULL)
    LIMIT @batch
    FOR UPDATE SKIP LOCKED);

-- name: InvitationConfirmationDeleteExpired :execrows
-- Pending acceptances whose confirmation link expired. Used links are deleted
-- when they are used.
DELETE FROM invitation_confirmation
WHERE id IN (
    SELECT id FROM invitation_confirmation
    WHERE expires_at <= now()
    LIMIT @batch
    FOR UPDATE SKIP LOCKED);
