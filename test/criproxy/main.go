// Command criproxy serves a CRI socket that forwards every call to a
// runtime's and counts the calls by method: how a reference client (the
// kubelet) loads the runtime, read the same way for any CRI client
// (docs/benchmarks.md §1). It is a measuring tool, not part of the agent.
//
//	criproxy -listen /tmp/cri.sock -upstream /run/containerd-2/containerd.sock -counts /tmp/counts.txt
//
// The counts file is rewritten every second and at exit (SIGINT, SIGTERM):
// a line a method, "<calls> <method>", most called first; an error from
// the runtime counts too.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

func main() {
	listen := flag.String("listen", "", "unix socket to serve")
	upstream := flag.String("upstream", "", "the runtime's unix socket")
	counts := flag.String("counts", "", "file the counts are written to")
	flag.Parse()
	if *listen == "" || *upstream == "" || *counts == "" {
		fmt.Fprintln(os.Stderr, "criproxy: -listen, -upstream and -counts are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *listen, strings.TrimPrefix(*upstream, "unix://"), *counts); err != nil {
		fmt.Fprintln(os.Stderr, "criproxy:", err)
		os.Exit(1)
	}
}

// run serves listen until ctx ends.
func run(ctx context.Context, listen, upstream, countsFile string) error {
	conn, err := grpc.NewClient("unix://"+upstream, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = os.Remove(listen)
	// The socket reaches the runtime with its caller's rights (root's, for
	// containerd): only its owner may connect, whatever the umask.
	old := syscall.Umask(0o177)
	l, err := net.Listen("unix", listen)
	syscall.Umask(old)
	if err != nil {
		return err
	}
	p := &proxy{conn: conn, calls: map[string]int{}}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(p.forward), grpc.ForceServerCodec(rawCodec{}), grpc.MaxRecvMsgSize(16<<20))
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				srv.Stop()
				return
			case <-t.C:
				_ = p.write(countsFile)
			}
		}
	}()
	err = srv.Serve(l)
	if werr := p.write(countsFile); werr != nil {
		return werr
	}
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// maxMethods bounds the methods counted by name (CRI has about 40); the
// calls of any further one are counted under otherMethods.
const (
	maxMethods   = 256
	otherMethods = "(other methods)"
)

// frame is one message, forwarded as the bytes it came in.
type frame struct{ b []byte }

// rawCodec moves frames without decoding them.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.(*frame).b, nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	v.(*frame).b = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

type proxy struct {
	conn  *grpc.ClientConn
	mu    sync.Mutex
	calls map[string]int
}

// forward counts a call and relays it, both ways, to the runtime.
func (p *proxy) forward(_ any, ss grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return errors.New("no method")
	}
	p.count(method)
	ctx := ss.Context()
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	cs, err := p.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	sent := make(chan error, 1)
	go func() {
		for {
			f := &frame{}
			if err := ss.RecvMsg(f); err != nil {
				if errors.Is(err, io.EOF) {
					err = cs.CloseSend()
				}
				sent <- err
				return
			}
			if err := cs.SendMsg(f); err != nil {
				sent <- err
				return
			}
		}
	}()
	for {
		f := &frame{}
		if err := cs.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := ss.SendMsg(f); err != nil {
			return err
		}
	}
}

// count adds a call of method.
func (p *proxy) count(method string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, known := p.calls[method]; !known && len(p.calls) >= maxMethods {
		method = otherMethods // a client naming ever new methods cannot grow the table
	}
	p.calls[method]++
}

// write rewrites file with the counts so far.
func (p *proxy) write(file string) error {
	p.mu.Lock()
	type row struct {
		method string
		n      int
	}
	rows := make([]row, 0, len(p.calls))
	for m, n := range p.calls {
		rows = append(rows, row{m, n})
	}
	p.mu.Unlock()
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].n > rows[j].n || rows[i].n == rows[j].n && rows[i].method < rows[j].method
	})
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%d %s\n", r.n, r.method)
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}
