module wallbench

go 1.21

require github.com/felixge/fgprof v0.9.5

require github.com/google/pprof v0.0.0-20240227163752-401108e1b7e7 // indirect
