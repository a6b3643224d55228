package hosted

import (
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Modal's API is gRPC with protobuf messages (service modal.client.ModalClient
// in modal_proto/api.proto). Rather than generate code for a schema of
// hundreds of messages, the driver encodes the few fields it sends and reads
// the few it needs by number; unknown fields are skipped, as protobuf allows.

// pbMsg is an encoded protobuf message being built. Fields at their zero
// value are left out, as proto3 does.
type pbMsg []byte

func (m pbMsg) str(n protowire.Number, s string) pbMsg {
	if s == "" {
		return m
	}
	m = protowire.AppendTag(m, n, protowire.BytesType)
	return protowire.AppendString(m, s)
}

// optStr writes s even when empty, for `optional string` fields.
func (m pbMsg) optStr(n protowire.Number, s string) pbMsg {
	m = protowire.AppendTag(m, n, protowire.BytesType)
	return protowire.AppendString(m, s)
}

func (m pbMsg) strs(n protowire.Number, ss []string) pbMsg {
	for _, s := range ss {
		m = m.optStr(n, s)
	}
	return m
}

func (m pbMsg) bytes(n protowire.Number, b []byte) pbMsg {
	if len(b) == 0 {
		return m
	}
	m = protowire.AppendTag(m, n, protowire.BytesType)
	return protowire.AppendBytes(m, b)
}

func (m pbMsg) uint(n protowire.Number, v uint64) pbMsg {
	if v == 0 {
		return m
	}
	m = protowire.AppendTag(m, n, protowire.VarintType)
	return protowire.AppendVarint(m, v)
}

func (m pbMsg) boolean(n protowire.Number, v bool) pbMsg {
	if !v {
		return m
	}
	return m.uint(n, 1)
}

// optInt writes a signed (int32) varint even when zero, for `optional int32`.
func (m pbMsg) optInt(n protowire.Number, v int32) pbMsg {
	m = protowire.AppendTag(m, n, protowire.VarintType)
	return protowire.AppendVarint(m, uint64(int64(v)))
}

func (m pbMsg) float(n protowire.Number, f float32) pbMsg {
	if f == 0 {
		return m
	}
	m = protowire.AppendTag(m, n, protowire.Fixed32Type)
	return protowire.AppendFixed32(m, math.Float32bits(f))
}

// msg writes a sub-message, present even when empty.
func (m pbMsg) msg(n protowire.Number, sub pbMsg) pbMsg {
	m = protowire.AppendTag(m, n, protowire.BytesType)
	return protowire.AppendBytes(m, sub)
}

// pbVal is one occurrence of a field read from a message.
type pbVal struct {
	num uint64 // varint and fixed values
	raw []byte // length-delimited values
}

// pbFields is a decoded message: every occurrence of each field, in order.
type pbFields map[protowire.Number][]pbVal

var errBadProto = errors.New("malformed protobuf message")

// parsePB splits an encoded message into its fields.
func parsePB(b []byte) (pbFields, error) {
	f := pbFields{}
	for len(b) > 0 {
		n, t, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil, errBadProto
		}
		b = b[l:]
		var v pbVal
		switch t {
		case protowire.VarintType:
			v.num, l = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var x uint32
			x, l = protowire.ConsumeFixed32(b)
			v.num = uint64(x)
		case protowire.Fixed64Type:
			v.num, l = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v.raw, l = protowire.ConsumeBytes(b)
		default:
			l = protowire.ConsumeFieldValue(n, t, b)
		}
		if l < 0 {
			return nil, errBadProto
		}
		b = b[l:]
		f[n] = append(f[n], v)
	}
	return f, nil
}

func (f pbFields) has(n protowire.Number) bool { return len(f[n]) > 0 }

// last returns the field's last occurrence, which wins for scalars.
func (f pbFields) last(n protowire.Number) pbVal {
	if vs := f[n]; len(vs) > 0 {
		return vs[len(vs)-1]
	}
	return pbVal{}
}

func (f pbFields) str(n protowire.Number) string  { return string(f.last(n).raw) }
func (f pbFields) raw(n protowire.Number) []byte  { return f.last(n).raw }
func (f pbFields) uint(n protowire.Number) uint64 { return f.last(n).num }
func (f pbFields) int32(n protowire.Number) int32 { return int32(f.last(n).num) }
func (f pbFields) boolean(n protowire.Number) bool {
	return f.last(n).num != 0
}
func (f pbFields) float(n protowire.Number) float32 {
	return math.Float32frombits(uint32(f.last(n).num))
}

func (f pbFields) strs(n protowire.Number) []string {
	var out []string
	for _, v := range f[n] {
		out = append(out, string(v.raw))
	}
	return out
}

// sub decodes the last occurrence of a message field; an absent field is an
// empty message.
func (f pbFields) sub(n protowire.Number) (pbFields, error) { return parsePB(f.last(n).raw) }

// subs decodes every occurrence of a repeated message field.
func (f pbFields) subs(n protowire.Number) ([]pbFields, error) {
	var out []pbFields
	for _, v := range f[n] {
		s, err := parsePB(v.raw)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// pbFrame carries one encoded message through gRPC: the codec neither
// knows nor checks the schema.
type pbFrame struct{ b []byte }

// pbCodec is the gRPC codec for pbFrame. It is named "proto" so that the
// content type is application/grpc+proto, as Modal's clients send.
type pbCodec struct{}

func (pbCodec) Name() string { return "proto" }

func (pbCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*pbFrame)
	if !ok {
		return nil, fmt.Errorf("envhosted: modal codec cannot encode %T", v)
	}
	return f.b, nil
}

func (pbCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*pbFrame)
	if !ok {
		return fmt.Errorf("envhosted: modal codec cannot decode into %T", v)
	}
	f.b = append([]byte(nil), data...)
	return nil
}
