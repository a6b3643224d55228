package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/subscription"
)

// The Standard Webhooks headers of a delivery.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// errSecretFormat is the error of a stored secret that is not `whsec_` and
// base64. It never repeats the value.
var errSecretFormat = errors.New("the signing secret is not in the whsec_ format")

// Signed is the Standard Webhooks headers of one attempt at a message.
type Signed struct {
	ID        string // webhook-id
	Timestamp string // webhook-timestamp: unix seconds
	Signature string // webhook-signature: "v1,<base64>"
}

// Sign signs body as message msgID sent at ts with secret (`whsec_` and the
// base64 of the key): the signature is HMAC-SHA256 of "{id}.{timestamp}.{body}"
// in standard base64, with the version prefix "v1,".
func Sign(secret, msgID string, ts time.Time, body []byte) (Signed, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return Signed{}, err
	}
	stamp := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID))
	mac.Write([]byte{'.'})
	mac.Write([]byte(stamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return Signed{ID: msgID, Timestamp: stamp, Signature: "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))}, nil
}

// decodeSecret returns the key of a signing secret.
func decodeSecret(secret string) ([]byte, error) {
	raw, ok := strings.CutPrefix(secret, subscription.SecretPrefix)
	if !ok {
		return nil, errSecretFormat
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) == 0 {
		return nil, errSecretFormat
	}
	return key, nil
}
