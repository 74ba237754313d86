// Command sink is the smallest OTLP profiles receiver the OpenTelemetry
// eBPF profiler accepts as its collection agent (it does not start without
// one): it takes every export over gRPC, writes one line per export
// ("export PROFILES SAMPLES") to stdout and keeps nothing, so that a
// benchmark measures the profiler and not a collector.
//
// Usage: sink 127.0.0.1:PORT
package main

import (
	"context"
	"fmt"
	"net"
	"os"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the profiler compresses its exports
)

type sink struct {
	pprofileotlp.UnimplementedGRPCServer
}

func (*sink) Export(_ context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	p := req.Profiles()
	fmt.Printf("export %d %d\n", p.ProfileCount(), p.SampleCount())
	return pprofileotlp.NewExportResponse(), nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sink 127.0.0.1:PORT")
		os.Exit(2)
	}
	l, err := net.Listen("tcp", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		os.Exit(1)
	}
	s := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	pprofileotlp.RegisterGRPCServer(s, &sink{})
	if err := s.Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		os.Exit(1)
	}
}
