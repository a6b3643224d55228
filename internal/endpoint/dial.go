package endpoint

import (
	"context"
	"net"
	"time"
)

// DialContext connects to address ("host:port") as a policy client would:
// the host is resolved with the policy's resolver and every address tried
// passes the ssrf guard (allowed prefixes and ports), each within
// ConnectTimeout. It is for protocols that dial themselves, such as gRPC
// (grpc.WithContextDialer); the URL rules do not apply, as there is no URL.
// Errors are *CallError, matching ErrRefused when the policy refused.
func (p *Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d := &net.Dialer{
		Timeout:   ConnectTimeout,
		KeepAlive: 30 * time.Second,
		Control:   p.guardian().Safe,
	}
	return p.dialContext(d)(ctx, network, address)
}
