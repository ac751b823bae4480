module nrirp.example/engineclient

go 1.22

require (
	google.golang.org/grpc v1.64.0
	google.golang.org/protobuf v1.36.5
)
