// Command badplugin is a plugin that misbehaves as GOSHMEM_BADPLUGIN_MODE
// says, for the host's tests: "cookie" fails the handshake, "stdout"
// writes garbage where the handshake goes, "info" answers garbage to
// Info, "result" answers operations with garbage, "anon" keeps regions in
// memory the PE cannot map, "crash" dies in the middle of a put, "hang"
// never answers a get, "hang-open" never finishes opening, "placed"
// serves a provider that places its regions in memory it is given. Any other mode serves loopback faithfully.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/loopback"
	"github.com/goshmem/goshmem/providers/plugin"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

func main() {
	lb, err := core.Lookup(loopback.Name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mode := os.Getenv("GOSHMEM_BADPLUGIN_MODE")
	switch mode {
	case "cookie":
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: goplugin.HandshakeConfig{ProtocolVersion: plugin.ProtocolVersion,
				MagicCookieKey: "GOSHMEM_PROVIDER_PLUGIN", MagicCookieValue: "somebody else's cookie"},
			Plugins:    goplugin.PluginSet{},
			GRPCServer: goplugin.DefaultGRPCServer,
		})
	case "stdout":
		fmt.Println("1|1|tcp|this is not an address|grpc|")
		time.Sleep(time.Minute)
	case "info":
		plugin.ServeServer(garbageInfo{plugin.NewServer(lb)})
	case "result":
		plugin.ServeServer(garbageResults{plugin.NewServer(lb)})
	case "placed":
		plugin.Serve(self{})
	case "crash", "hang", "anon", "hang-open":
		plugin.Serve(provider{lb, mode})
	default:
		plugin.Serve(lb)
	}
}

// garbageInfo answers Info with a locality core does not define.
type garbageInfo struct{ pb.ProviderServer }

func (g garbageInfo) Info(ctx context.Context, r *pb.InfoRequest) (*pb.InfoReply, error) {
	in, err := g.ProviderServer.Info(ctx, r)
	if err == nil {
		in.Locality = 42
	}
	return in, err
}

// garbageResults answers every operation after the stream's opening with
// an error of a kind the protocol does not define.
type garbageResults struct{ pb.ProviderServer }

func (g garbageResults) Endpoint(st pb.Provider_EndpointServer) error {
	return g.ProviderServer.Endpoint(&garbageStream{Provider_EndpointServer: st})
}

type garbageStream struct {
	pb.Provider_EndpointServer
	sent int
}

func (s *garbageStream) Send(r *pb.Result) error {
	if s.sent++; s.sent > 1 {
		r.Err = &pb.Error{Kind: 99, Msg: "?"}
	}
	return s.Provider_EndpointServer.Send(r)
}

// provider wraps loopback; its endpoints die in Put (mode "crash") or
// never return from Get (mode "hang"), its regions are not shared memory
// (mode "anon").
type provider struct {
	core.Provider
	mode string
}

func (p provider) Open(cfg *core.Config) (core.Domain, error) {
	if p.mode == "hang-open" {
		select {}
	}
	d, err := p.Provider.Open(cfg)
	if err != nil {
		return nil, err
	}
	return domain{d, p.mode}, nil
}

type domain struct {
	core.Domain
	mode string
}

func (d domain) NewEndpoint(o core.EndpointOptions) (core.Endpoint, error) {
	e, err := d.Domain.NewEndpoint(o)
	if err != nil {
		return nil, err
	}
	return endpoint{e, d.mode}, nil
}

// NewRegion hands out, in mode "anon", regions whose local part is
// ordinary process memory.
func (d domain) NewRegion(size int) (core.Region, error) {
	r, err := d.Domain.NewRegion(size)
	if err != nil || d.mode != "anon" {
		return r, err
	}
	return anonRegion{make([]byte, size)}, nil
}

// RegisterRegion, in mode "anon", registers the memory and hands out
// other memory as the region's local part, which the PE cannot map.
func (d domain) RegisterRegion(m []byte) (core.Region, error) {
	r, err := d.Domain.RegisterRegion(m)
	if err != nil || d.mode != "anon" {
		return r, err
	}
	return anonRegion{make([]byte, len(m))}, nil
}

type anonRegion struct{ b []byte }

func (r anonRegion) Local() []byte { return r.b }

type endpoint struct {
	core.Endpoint
	mode string
}

func (e endpoint) Put(pe int, r core.Region, off int, src []byte) error {
	if e.mode == "crash" {
		panic("badplugin: crashing in put as asked")
	}
	return e.Endpoint.Put(pe, r, off, src)
}

func (e endpoint) Get(pe int, r core.Region, off int, dst []byte) error {
	if e.mode == "hang" {
		select {}
	}
	return e.Endpoint.Get(pe, r, off, dst)
}
