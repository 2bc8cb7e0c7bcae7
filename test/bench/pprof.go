package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"
)

// servePprof serves the run's profiles on addr, which must be a loopback
// address: the process holds the bus's admin credentials and the
// profiles show its memory. Mutex and block profiling are turned on, at
// a sampling rate that keeps their cost out of the figures' noise.
func servePprof(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%s is not a loopback address", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	runtime.SetMutexProfileFraction(100)
	runtime.SetBlockProfileRate(int(time.Millisecond))
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	fmt.Printf("pprof: http://%s/debug/pprof/\n", l.Addr())
	return nil
}
