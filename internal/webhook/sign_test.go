package webhook_test

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/webhook"
	"github.com/svcdev/svc/internal/webhook/webhooktest"
)

func headersOf(s webhook.Signed) http.Header {
	h := http.Header{}
	h.Set("webhook-id", s.ID)
	h.Set("webhook-timestamp", s.Timestamp)
	h.Set("webhook-signature", s.Signature)
	return h
}

func newSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// TestSignKnownVector checks the signature of the example of the Standard
// Webhooks specification's reference libraries.
func TestSignKnownVector(t *testing.T) {
	t.Parallel()
	s, err := webhook.Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	require.NoError(t, err)
	require.Equal(t, webhook.Signed{ID: "msg_p5jXN8AQM9LWM0D4loKWxJek", Timestamp: "1614265330",
		Signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}, s)
}

// TestSignVerifiedByReference: what Sign makes, the reference verifier
// accepts; any change to the id, timestamp, body or key, or a timestamp
// outside the tolerance, is refused.
func TestSignVerifiedByReference(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	at := time.Now()
	body := []byte(`{"type":"agent.revision_published","timestamp":"2026-11-22T10:15:30.1Z","data":{"agent_id":"ap_x"}}`)
	s, err := webhook.Sign(secret, "dlv_01jd5v6w1q3yb8j8y3tn9z2k7h", at, body)
	require.NoError(t, err)
	require.Equal(t, strconv.FormatInt(at.Unix(), 10), s.Timestamp)
	require.Regexp(t, `^v1,[A-Za-z0-9+/]{43}=$`, s.Signature)
	require.NoError(t, webhooktest.Verify(secret, headersOf(s), body, at, webhooktest.DefaultTolerance))

	tampered := append([]byte(nil), body...)
	tampered[len(tampered)-3] = 'y'
	require.ErrorIs(t, webhooktest.Verify(secret, headersOf(s), tampered, at, webhooktest.DefaultTolerance), webhooktest.ErrSignature)

	h := headersOf(s)
	h.Set("webhook-timestamp", strconv.FormatInt(at.Unix()+1, 10))
	require.ErrorIs(t, webhooktest.Verify(secret, h, body, at, webhooktest.DefaultTolerance), webhooktest.ErrSignature)

	h = headersOf(s)
	h.Set("webhook-id", "dlv_01jd5v6w1q3yb8j8y3tn9z2k7i")
	require.ErrorIs(t, webhooktest.Verify(secret, h, body, at, webhooktest.DefaultTolerance), webhooktest.ErrSignature)

	require.ErrorIs(t, webhooktest.Verify(newSecret(t), headersOf(s), body, at, webhooktest.DefaultTolerance), webhooktest.ErrSignature)

	// A replay outside the tolerance, either way, is refused even though the
	// signature matches.
	require.ErrorIs(t, webhooktest.Verify(secret, headersOf(s), body, at.Add(6*time.Minute), webhooktest.DefaultTolerance), webhooktest.ErrTimestamp)
	require.ErrorIs(t, webhooktest.Verify(secret, headersOf(s), body, at.Add(-6*time.Minute), webhooktest.DefaultTolerance), webhooktest.ErrTimestamp)
	require.NoError(t, webhooktest.Verify(secret, headersOf(s), body, at.Add(4*time.Minute), webhooktest.DefaultTolerance))

	// The reference accepts one matching signature among several (rotation).
	h = headersOf(s)
	h.Set("webhook-signature", "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= "+s.Signature)
	require.NoError(t, webhooktest.Verify(secret, h, body, at, webhooktest.DefaultTolerance))
	h.Set("webhook-signature", "v2,"+s.Signature[3:])
	require.ErrorIs(t, webhooktest.Verify(secret, h, body, at, webhooktest.DefaultTolerance), webhooktest.ErrSignature)

	// A new attempt at the same message: same id, new timestamp and signature.
	later, err := webhook.Sign(secret, s.ID, at.Add(90*time.Second), body)
	require.NoError(t, err)
	require.Equal(t, s.ID, later.ID)
	require.NotEqual(t, s.Timestamp, later.Timestamp)
	require.NotEqual(t, s.Signature, later.Signature)
	require.NoError(t, webhooktest.Verify(secret, headersOf(later), body, at.Add(90*time.Second), webhooktest.DefaultTolerance))
}

func TestSignRefusesMalformedSecrets(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{"", "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!"} {
		_, err := webhook.Sign(secret, "dlv_x", time.Now(), []byte("{}"))
		require.Error(t, err, secret)
		if len(secret) > len("whsec_") {
			require.NotContains(t, err.Error(), secret[len("whsec_"):], "the value is never repeated")
		}
	}
}
