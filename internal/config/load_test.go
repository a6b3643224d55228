package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// writeTOML writes a config file for one test and returns its path.
func writeTOML(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "svc.toml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()

	cfg, err := Load("", []string{"PATH=/usr/bin", "HOME=/root", "SVCX=1"})
	require.NoError(t, err)
	require.Equal(t, Default(), *cfg)

	cfg, err = Load(writeTOML(t, "# nothing set\n"), nil)
	require.NoError(t, err)
	require.Equal(t, Default(), *cfg)
}

func TestLoadLayers(t *testing.T) {
	t.Parallel()

	defaults := Default().Outbox.Defaults
	ptr := intPtr

	tests := []struct {
		name  string
		file  string
		env   []string
		check func(t *testing.T, c *Config)
	}{
		{
			name: "FileOverridesDefaults",
			file: `
[server]
listen = ":9000"
idle_timeout = "5m"
[database]
auto_migrate = false
[worker]
slots = 8
[endpoint_policy]
allowed_prefixes = ["10.0.0.0/8", "fd00::/8"]
allowed_ports = [8443]
[limits]
asset_bytes = 5000000000
`,
			check: func(t *testing.T, c *Config) {
				require.Equal(t, ":9000", c.Server.Listen)
				require.Equal(t, 5*time.Minute, c.Server.IdleTimeout)
				require.Equal(t, 30*time.Second, c.Server.ShutdownTimeout)
				require.False(t, c.Database.AutoMigrate)
				require.Equal(t, 8, c.Worker.Slots)
				require.Equal(t, 3, c.Worker.MaxAttempts)
				require.Equal(t, []string{"10.0.0.0/8", "fd00::/8"}, c.EndpointPolicy.AllowedPrefixes)
				require.Equal(t, []int{8443}, c.EndpointPolicy.AllowedPorts)
				require.Equal(t, int64(5000000000), c.Limits.AssetBytes)
			},
		},
		{
			name: "TracingFromFileAndEnv",
			file: "[tracing]\notlp_endpoint = \"http://otel:4318\"\nsample_ratio = 0.25\nheaders = [\"x-key=a\"]\n",
			env:  []string{"SVC_TRACING__QUEUE_SIZE=64", "SVC_TRACING__HEADERS=authorization=Bearer t,x-team=b"},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, "http://otel:4318", c.Tracing.OTLPEndpoint)
				require.Equal(t, 0.25, c.Tracing.SampleRatio)
				require.Equal(t, 64, c.Tracing.QueueSize)
				require.Equal(t, []string{"authorization=Bearer t", "x-team=b"}, c.Tracing.Headers)
			},
		},
		{
			name:  "TracingRatioInteger",
			file:  "[tracing]\nsample_ratio = 0\n",
			check: func(t *testing.T, c *Config) { require.Equal(t, 0.0, c.Tracing.SampleRatio) },
		},
		{
			name:  "TracingRatioFromEnv",
			env:   []string{"SVC_TRACING__SAMPLE_RATIO=0.5"},
			check: func(t *testing.T, c *Config) { require.Equal(t, 0.5, c.Tracing.SampleRatio) },
		},
		{
			name: "EnvOverridesFile",
			file: "[server]\nlisten = \":9000\"\npublic_url = \"https://a.example\"\n",
			env:  []string{"SVC_SERVER__LISTEN=:9100"},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, ":9100", c.Server.Listen)
				require.Equal(t, "https://a.example", c.Server.PublicURL)
			},
		},
		{
			name: "EnvScalarsAreConverted",
			env: []string{
				"SVC_WORKER__SLOTS=7", "SVC_DATABASE__AUTO_MIGRATE=false",
				"SVC_SERVER__IDLE_TIMEOUT=1m30s", "SVC_LIMITS__ASSET_BYTES=10", "SVC_METRICS__LISTEN=:9090",
			},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, 7, c.Worker.Slots)
				require.False(t, c.Database.AutoMigrate)
				require.Equal(t, 90*time.Second, c.Server.IdleTimeout)
				require.Equal(t, int64(10), c.Limits.AssetBytes)
				require.Equal(t, ":9090", c.Metrics.Listen)
			},
		},
		{
			name: "EnvListsReplaceFileLists",
			file: "[endpoint_policy]\nallowed_ports = [1, 2]\nallowed_prefixes = [\"10.0.0.0/8\"]\n",
			env:  []string{"SVC_ENDPOINT_POLICY__ALLOWED_PORTS=8443, 9000", `SVC_ENDPOINT_POLICY__ALLOWED_PREFIXES=["192.168.0.0/16"]`},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, []int{8443, 9000}, c.EndpointPolicy.AllowedPorts)
				require.Equal(t, []string{"192.168.0.0/16"}, c.EndpointPolicy.AllowedPrefixes)
			},
		},
		{
			name: "EnvCORSOrigins",
			env:  []string{"SVC_SERVER__CORS_ALLOWED_ORIGINS=https://app.example.com,http://localhost:3000"},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, []string{"https://app.example.com", "http://localhost:3000"}, c.Server.CORSAllowedOrigins)
			},
		},
		{
			name: "EnvEmptyListClearsFileList",
			file: "[endpoint_policy]\nallowed_ports = [1, 2]\n",
			env:  []string{"SVC_ENDPOINT_POLICY__ALLOWED_PORTS="},
			check: func(t *testing.T, c *Config) {
				require.Empty(t, c.EndpointPolicy.AllowedPorts)
			},
		},
		{
			name: "EnvJSONSectionReplacesFileSection",
			file: "[mail]\nfrom = \"ops <ops@example.com>\"\n",
			env:  []string{`SVC_MAIL={"transport":"smtp","smtp_host":"mail.example.com","smtp_port":465}`},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, "smtp", c.Mail.Transport)
				require.Equal(t, "mail.example.com", c.Mail.SMTPHost)
				require.Equal(t, 465, c.Mail.SMTPPort)
				require.Equal(t, Default().Mail.From, c.Mail.From)
			},
		},
		{
			name: "FileByKindInheritsBuiltinAndDefaults",
			file: "[outbox.by_kind.webhook]\nmax_attempts = 5\n",
			check: func(t *testing.T, c *Config) {
				want := defaults
				want.DeliveredRetentionSeconds = 604800
				want.MaxAttempts = 5
				require.Equal(t, want, c.Outbox.Policy("webhook"))
				require.Equal(t, defaults, c.Outbox.Policy("identity_mail"))
				require.Equal(t, map[string]OutboxOverride{"webhook": {MaxAttempts: ptr(5)}}, c.Outbox.ByKind)
			},
		},
		{
			name: "EnvByKindReplacesFileByKind",
			file: "[outbox.by_kind.webhook]\nmax_attempts = 5\n[outbox.by_kind.checkpoint_cleanup]\nparallel = 4\n",
			env:  []string{`SVC_OUTBOX__BY_KIND={"identity_mail":{"batch":4}}`},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, map[string]OutboxOverride{"identity_mail": {Batch: ptr(4)}}, c.Outbox.ByKind)
				webhook := defaults
				webhook.DeliveredRetentionSeconds = 604800
				require.Equal(t, webhook, c.Outbox.Policy("webhook"))
				require.Equal(t, 2, c.Outbox.Policy("checkpoint_cleanup").Parallel)
				require.Equal(t, 4, c.Outbox.Policy("identity_mail").Batch)
			},
		},
		{
			name: "EnvDefaultsReplacesFileDefaults",
			file: "[outbox.defaults]\nbatch = 64\nparallel = 16\n",
			env:  []string{`SVC_OUTBOX__DEFAULTS={"batch":10}`},
			check: func(t *testing.T, c *Config) {
				want := defaults
				want.Batch = 10
				require.Equal(t, want, c.Outbox.Defaults)
			},
		},
		{
			name: "EnvKindObjectReplacesFileKind",
			file: "[outbox.by_kind.webhook]\nmax_attempts = 5\n[outbox.by_kind.identity_mail]\nbatch = 3\n",
			env:  []string{`SVC_OUTBOX__BY_KIND__WEBHOOK={"batch":4}`},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, map[string]OutboxOverride{
					"webhook":       {Batch: ptr(4)},
					"identity_mail": {Batch: ptr(3)},
				}, c.Outbox.ByKind)
			},
		},
		{
			name: "EnvKindFieldAddsToFileKind",
			file: "[outbox.by_kind.webhook]\nmax_attempts = 5\n",
			env:  []string{"SVC_OUTBOX__BY_KIND__WEBHOOK__BATCH=4"},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, map[string]OutboxOverride{"webhook": {MaxAttempts: ptr(5), Batch: ptr(4)}}, c.Outbox.ByKind)
			},
		},
		{
			name: "DeeperEnvRefinesObject",
			env:  []string{"SVC_OUTBOX__DEFAULTS__PARALLEL=3", `SVC_OUTBOX__DEFAULTS={"batch":10,"parallel":5}`},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, 10, c.Outbox.Defaults.Batch)
				require.Equal(t, 3, c.Outbox.Defaults.Parallel)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			path := ""
			if tt.file != "" {
				path = writeTOML(t, tt.file)
			}
			cfg, err := Load(path, tt.env)
			require.NoError(t, err)
			tt.check(t, cfg)
		})
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		file string
		env  []string
		want []string // substrings of the error; {file} stands for "config file PATH"
		not  []string // must not appear, such as secrets
	}{
		{name: "FileUnknownKey", file: "[server]\nlistn = \":1\"\n", want: []string{`{file}: unknown key "server.listn"`}},
		{name: "FileUnknownSection", file: "[foo]\nx = 1\n", want: []string{`{file}: unknown section "foo"`}},
		{name: "FileUnknownTopLevelKey", file: "listen = \":1\"\n", want: []string{`{file}: unknown section "listen"`}},
		{name: "FileUnknownNestedKey", file: "[outbox.defaults]\nbatchh = 1\n", want: []string{`{file}: unknown key "outbox.defaults.batchh"`}},
		{
			name: "FileUnknownKind", file: "[outbox.by_kind.webhok]\nbatch = 1\n",
			want: []string{`{file}: unknown outbox kind "webhok" (known: webhook, identity_mail, subagent_result, memory_namespace_purge, checkpoint_cleanup)`},
		},
		{name: "FileUnknownKeyInKind", file: "[outbox.by_kind.webhook]\nbatchh = 1\n", want: []string{`{file}: unknown key "outbox.by_kind.webhook.batchh"`}},
		{name: "FileWrongType", file: "[worker]\nslots = \"many\"\n", want: []string{`{file}: key "worker.slots": expected an integer, got string "many"`}},
		{name: "FileQuotedInteger", file: "[worker]\nslots = \"5\"\n", want: []string{`{file}: key "worker.slots": expected an integer, got string "5"`}},
		{name: "FileFloatInteger", file: "[worker]\nslots = 5.0\n", want: []string{`{file}: key "worker.slots": expected an integer, got number 5`}},
		{name: "FileIntegerDuration", file: "[server]\nidle_timeout = 30\n", want: []string{`{file}: key "server.idle_timeout": expected a duration such as "30s", got integer 30`}},
		{name: "FileBadDuration", file: "[server]\nidle_timeout = \"soon\"\n", want: []string{`{file}: key "server.idle_timeout": expected a duration`}},
		{name: "FileSectionNotTable", file: "server = 1\n", want: []string{`{file}: key "server": expected a table, got integer 1`}},
		{name: "FileWrongListElement", file: "[endpoint_policy]\nallowed_ports = [80, \"x\"]\n", want: []string{`{file}: key "endpoint_policy.allowed_ports[1]": expected an integer, got string "x"`}},
		{name: "FileRatioString", file: "[tracing]\nsample_ratio = \"half\"\n", want: []string{`{file}: key "tracing.sample_ratio": expected a number, got string "half"`}},
		{name: "EnvRatioText", env: []string{"SVC_TRACING__SAMPLE_RATIO=half"}, want: []string{`environment variable SVC_TRACING__SAMPLE_RATIO: key "tracing.sample_ratio": expected a number, got string "half"`}},
		{name: "EnvRatioOutOfRange", env: []string{"SVC_TRACING__SAMPLE_RATIO=2"}, want: []string{"tracing.sample_ratio: must be a number from 0 to 1, got 2"}},
		{name: "FileHeadersNotEchoed", file: "[tracing]\nheaders = [123456]\n", want: []string{`{file}: key "tracing.headers[0]": expected a string, got integer`}, not: []string{"123456"}},
		{name: "FileSecretNotEchoed", file: "[mail]\nsmtp_password = 987654\n", want: []string{`{file}: key "mail.smtp_password": expected a string, got integer`}, not: []string{"987654"}},
		{name: "FileSyntax", file: "[server\n", want: []string{"{file}: line 1"}},
		{name: "FileAllProblems", file: "[foo]\n[server]\nlistn = 1\n", want: []string{`unknown section "foo"`, `unknown key "server.listn"`}},
		{name: "EnvUnknownKey", env: []string{"SVC_SERVER__LISTN=:1"}, want: []string{`environment variable SVC_SERVER__LISTN: unknown key "server.listn"`}},
		{name: "EnvUnknownSection", env: []string{"SVC_SERVR__LISTEN=:1"}, want: []string{`environment variable SVC_SERVR__LISTEN: unknown section "servr"`}},
		{name: "EnvKeyBelowScalar", env: []string{"SVC_SERVER__LISTEN__PORT=1"}, want: []string{`environment variable SVC_SERVER__LISTEN__PORT: unknown key "server.listen.port"`}},
		{name: "EnvMalformedName", env: []string{"SVC_SERVER____LISTEN=1"}, want: []string{"environment variable SVC_SERVER____LISTEN: malformed name"}},
		{
			name: "EnvUnknownKindInJSON", env: []string{`SVC_OUTBOX__BY_KIND={"webhok":{"batch":1}}`},
			want: []string{`environment variable SVC_OUTBOX__BY_KIND: unknown outbox kind "webhok" (known: webhook, identity_mail,`},
		},
		{name: "EnvUnknownKindInName", env: []string{"SVC_OUTBOX__BY_KIND__WEBHOK__BATCH=1"}, want: []string{`environment variable SVC_OUTBOX__BY_KIND__WEBHOK__BATCH: unknown outbox kind "webhok"`}},
		{name: "EnvUnknownKeyInJSON", env: []string{`SVC_OUTBOX__DEFAULTS={"batchh":1}`}, want: []string{`environment variable SVC_OUTBOX__DEFAULTS: unknown key "outbox.defaults.batchh"`}},
		{name: "EnvWrongType", env: []string{"SVC_WORKER__SLOTS=many"}, want: []string{`environment variable SVC_WORKER__SLOTS: key "worker.slots": expected an integer, got string "many"`}},
		{name: "EnvWrongBoolean", env: []string{"SVC_DATABASE__AUTO_MIGRATE=maybe"}, want: []string{`environment variable SVC_DATABASE__AUTO_MIGRATE: key "database.auto_migrate": expected a boolean`}},
		{name: "EnvWrongListElement", env: []string{"SVC_ENDPOINT_POLICY__ALLOWED_PORTS=80,x"}, want: []string{`environment variable SVC_ENDPOINT_POLICY__ALLOWED_PORTS: key "endpoint_policy.allowed_ports[1]": expected an integer`}},
		{name: "EnvWrongTypeInJSON", env: []string{`SVC_OUTBOX__DEFAULTS={"batch":"4"}`}, want: []string{`environment variable SVC_OUTBOX__DEFAULTS: key "outbox.defaults.batch": expected an integer, got string "4"`}},
		{name: "EnvFractionInJSON", env: []string{`SVC_OUTBOX__DEFAULTS={"batch":4.5}`}, want: []string{`key "outbox.defaults.batch": expected an integer, got number 4.5`}},
		{name: "EnvNullInJSON", env: []string{`SVC_OUTBOX__BY_KIND={"webhook":{"batch":null}}`}, want: []string{`key "outbox.by_kind.webhook.batch": expected an integer, got null`}},
		{name: "EnvInvalidJSON", env: []string{`SVC_OUTBOX__BY_KIND={"webhook":`}, want: []string{`environment variable SVC_OUTBOX__BY_KIND: key "outbox.by_kind": invalid JSON object`}},
		{name: "EnvTrailingJSON", env: []string{`SVC_OUTBOX__DEFAULTS={} {}`}, want: []string{`environment variable SVC_OUTBOX__DEFAULTS: key "outbox.defaults": invalid JSON object: unexpected data`}},
		{name: "EnvJSONNotObject", env: []string{`SVC_OUTBOX__DEFAULTS=[1]`}, want: []string{`environment variable SVC_OUTBOX__DEFAULTS: key "outbox.defaults": expected a JSON object, got array`}},
		{name: "EnvInvalidJSONList", env: []string{`SVC_ENDPOINT_POLICY__ALLOWED_PORTS=[80,`}, want: []string{`environment variable SVC_ENDPOINT_POLICY__ALLOWED_PORTS: key "endpoint_policy.allowed_ports": invalid JSON array`}},
		{name: "EnvSameKeyTwice", env: []string{"SVC_SERVER__LISTEN=:1", "SVC_server__listen=:2"}, want: []string{`sets key "server.listen", which SVC_SERVER__LISTEN also sets`}},
		{
			name: "FileAndEnvTogether", file: "[server]\nlistn = 1\n", env: []string{"SVC_SERVR__LISTEN=:1"},
			want: []string{`{file}: unknown key "server.listn"`, `environment variable SVC_SERVR__LISTEN: unknown section "servr"`},
		},
		{name: "InvalidValue", env: []string{"SVC_WORKER__SLOTS=0"}, want: []string{"invalid configuration", "worker.slots: must be greater than 0, got 0"}},
		{name: "InvalidKindValue", file: "[outbox.by_kind.webhook]\nbatch = 0\n", want: []string{"outbox.by_kind.webhook.batch: must be greater than 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			path := ""
			if tt.file != "" {
				path = writeTOML(t, tt.file)
			}
			cfg, err := Load(path, tt.env)
			require.Error(t, err)
			require.Nil(t, cfg)
			for _, want := range tt.want {
				require.Contains(t, err.Error(), strings.ReplaceAll(want, "{file}", "config file "+path))
			}
			for _, not := range tt.not {
				require.NotContains(t, err.Error(), not)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()

	path := filepath.Join(t.TempDir(), "absent.toml")
	_, err := Load(path, nil)
	require.ErrorContains(t, err, "config file "+path)
	require.ErrorIs(t, err, os.ErrNotExist)
}
