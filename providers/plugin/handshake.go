package plugin

import (
	"context"
	"errors"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// ProtocolVersion is the version of the plugin protocol this package
// speaks. go-plugin negotiates it in the handshake: a host offers every
// version in versionedPlugins, a plugin answers with the highest it
// serves, and a later protocol adds an entry rather than changing this one.
const ProtocolVersion = 1

// Prefix starts the name of every plugin executable: goshmem-provider-NAME
// serves the provider NAME.
const Prefix = "goshmem-provider-"

// handshake is go-plugin's guard against running a plugin by hand or
// against the wrong host: both sides must agree on the cookie.
var handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "GOSHMEM_PROVIDER_PLUGIN",
	MagicCookieValue: "6f1d3c2e-goshmem-provider",
}

// pluginName is the name under which a plugin process serves its provider
// in go-plugin's plugin set.
const pluginName = "provider"

// versionedPlugins maps each protocol version to the plugin set that
// speaks it, on both sides of the handshake.
func versionedPlugins(server pb.ProviderServer) map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{
		ProtocolVersion: {pluginName: &grpcPlugin{server: server}},
	}
}

// grpcPlugin adapts the generated service to go-plugin: the plugin process
// registers server, the host gets a client.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	server pb.ProviderServer // nil on the host side
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.server == nil {
		return errors.New("plugin: no provider to serve")
	}
	pb.RegisterProviderServer(s, p.server)
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewProviderClient(c), nil
}
