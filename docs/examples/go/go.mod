module github.com/svcdev/svc/docs/examples/go

go 1.26.0

require (
	github.com/oapi-codegen/oapi-codegen/v2 v2.8.2
	github.com/svcdev/svc v0.0.0
)

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/oapi-codegen/nullable v1.1.0 // indirect
	github.com/oapi-codegen/runtime v1.8.0 // indirect
)

// The example builds against this checkout's generated client. An
// integration requires a released version of github.com/svcdev/svc instead.
replace github.com/svcdev/svc => ../../..
