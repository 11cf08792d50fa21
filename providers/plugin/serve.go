package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/sys"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// Serve makes this program a plugin serving p: call it from the main of
// an executable named goshmem-provider-NAME. It speaks go-plugin's
// handshake on stdout, serves the protocol until the host ends it, and
// exits if the host dies without ending it. Run by hand, it says so and
// exits with status 1.
//
// Re-exporting a provider is a short main:
//
//	func main() {
//		p, err := core.Lookup("loopback")
//		if err != nil {
//			log.Fatal(err)
//		}
//		plugin.Serve(p)
//	}
//
// Run with the single argument ManifestFlag, it prints p's manifest on
// stdout and exits instead (see ManifestPath).
func Serve(p core.Provider) {
	if len(os.Args) == 2 && os.Args[1] == ManifestFlag {
		if err := printManifest(os.Stdout, p); err != nil {
			fmt.Fprintln(os.Stderr, "goshmem plugin:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	ServeServer(NewServer(p))
}

// ServeServer is Serve for a protocol server other than NewServer's, such
// as one that wraps it.
func ServeServer(srv pb.ProviderServer) {
	go exitWithParent()
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  handshake,
		VersionedPlugins: versionedPlugins(srv),
		GRPCServer:       goplugin.DefaultGRPCServer,
		Logger:           hclog.NewNullLogger(),
	})
}

// parentPoll is how often a plugin checks that its host still lives.
const parentPoll = 100 * time.Millisecond

// exitWithParent ends the plugin when the process that started it is
// gone (it was re-parented): a plugin never outlives its PE, even one that
// was killed before it could end it.
func exitWithParent() {
	ppid := os.Getppid()
	for range time.Tick(parentPoll) {
		if os.Getppid() != ppid {
			fmt.Fprintln(os.Stderr, "goshmem plugin: the PE that started this plugin is gone; exiting")
			os.Exit(3)
		}
	}
}

// server serves one wrapped provider to one host: one domain at most.
type server struct {
	pb.UnimplementedProviderServer
	p core.Provider

	mu      sync.Mutex
	boot    *proxyBoot
	dom     core.Domain
	capture *capture
	regions []core.Region
	placed  [][]byte      // mappings of placed regions, unmapped after Close
	done    chan struct{} // closed by Close
}

// NewServer returns the protocol's server for p. Serve uses it; tests and
// programs that run go-plugin themselves may too.
func NewServer(p core.Provider) pb.ProviderServer {
	return &server{p: p, done: make(chan struct{})}
}

func (s *server) Info(context.Context, *pb.InfoRequest) (*pb.InfoReply, error) {
	return encodeInfo(s.p.Info()), nil
}

// Session implements the protocol's Session: it opens the domain with the
// host's bootstrap proxied over the stream, then keeps the stream (and so
// the bootstrap) until Close or until the host goes away.
func (s *server) Session(st pb.Provider_SessionServer) error {
	m, err := st.Recv()
	if err != nil {
		return err
	}
	open := m.GetOpen()
	if open == nil || open.Size <= 0 || open.Rank < 0 || open.Rank >= open.Size {
		return status.Errorf(codes.InvalidArgument, "a session starts with a valid open request, got %v", m)
	}
	boot := &proxyBoot{rank: int(open.Rank), size: int(open.Size), stream: st}
	cfg := &core.Config{Bootstrap: boot, JobID: open.JobId, Secret: open.Secret, HostID: open.HostId,
		Env: func(k string) (string, bool) {
			if v, ok := open.Env[k]; ok {
				return v, true
			}
			return os.LookupEnv(k)
		}}
	s.mu.Lock()
	if s.boot != nil {
		s.mu.Unlock()
		return status.Error(codes.FailedPrecondition, "this plugin process already serves a domain")
	}
	s.boot = boot
	s.capture = newCapture(cfg.JobDir())
	boot.before = s.capture.scan
	s.mu.Unlock()

	d, err := s.p.Open(cfg)
	if d != nil {
		// Before the host hears of it: its next call may come at once.
		s.mu.Lock()
		s.dom = d
		s.mu.Unlock()
	}
	_, waiter := d.(core.LocalWaiter)
	opened := &pb.Opened{Err: encodeErr(err), Waiter: waiter}
	if err := boot.send(&pb.PluginMsg{Msg: &pb.PluginMsg_Opened{Opened: opened}}); err != nil || d == nil {
		if d != nil {
			d.Close()
		}
		return err
	}
	select {
	case <-s.done:
	case <-st.Context().Done():
	}
	return nil
}

// domain returns the open domain, or an error for a call out of order.
func (s *server) domain() (core.Domain, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dom == nil {
		return nil, status.Error(codes.FailedPrecondition, "no domain is open")
	}
	return s.dom, nil
}

// region returns the region with the given id.
func (s *server) region(id uint32) (core.Region, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(id) >= len(s.regions) {
		return nil, fmt.Errorf("no region %d (%d exist): %w", id, len(s.regions), core.ErrInvalid)
	}
	return s.regions[id], nil
}

// Close implements the protocol's Close: it closes the wrapped domain and
// ends the session.
func (s *server) Close(context.Context, *pb.CloseRequest) (*pb.CloseReply, error) {
	d, err := s.domain()
	if err != nil {
		return nil, err
	}
	err = d.Close()
	s.mu.Lock()
	for _, m := range s.placed {
		err = errors.Join(err, sys.Retire(m))
	}
	s.placed = nil
	s.mu.Unlock()
	s.capture.drop()
	s.mu.Lock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.mu.Unlock()
	return &pb.CloseReply{Err: encodeErr(err)}, nil
}

// Endpoint implements the protocol's Endpoint: it maps the staging area
// named by the first Op, opens a wrapped endpoint and executes every
// further Op in order, answering each.
func (s *server) Endpoint(st pb.Provider_EndpointServer) error {
	d, err := s.domain()
	if err != nil {
		return err
	}
	first, err := st.Recv()
	if err != nil {
		return err
	}
	if first.Kind != pb.Op_OPEN || first.StageSize <= 0 || first.StageSize > maxStaging {
		return status.Errorf(codes.InvalidArgument, "an endpoint stream starts with OPEN and a staging size up to %d", maxStaging)
	}
	stage, err := sys.OpenShared(first.StagePath, int(first.StageSize))
	if err != nil {
		return st.Send(&pb.Result{Err: encodeErr(fmt.Errorf("map the staging area: %w", err))})
	}
	defer sys.Unmap(stage)
	ep, err := d.NewEndpoint(core.EndpointOptions{Serialized: first.Serialized, Private: first.Private, NoStore: first.NoStore})
	if err := st.Send(&pb.Result{Err: encodeErr(err)}); err != nil || ep == nil {
		return err
	}
	defer ep.Close()
	x := executor{s: s, ep: ep, stage: stage}
	var res pb.Result
	for {
		op, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return ep.Close()
		}
		if err != nil {
			return err
		}
		res.Value, err = x.do(op)
		res.Err = encodeErr(err)
		if err := st.Send(&res); err != nil {
			return err
		}
	}
}
