module pmuprof/tests/go/errgroup

go 1.19

require golang.org/x/sync v0.10.0
