package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/goshmem/goshmem/core"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// A plugin's manifest is what it offers (the wrapped provider's Info) as
// JSON in a file beside its executable, goshmem-provider-NAME.json. Info
// reads it, so listing a plugin never starts it. The plugin writes it
// itself when run with ManifestFlag, and `provinfo -check NAME` writes it
// after a self-test that passed.

// ManifestFlag is the argument that makes a plugin executable print its
// manifest on stdout and exit, instead of serving.
const ManifestFlag = "-manifest"

// ManifestExt is the manifest's suffix: goshmem-provider-NAME.json.
const ManifestExt = ".json"

// ManifestPath is the manifest of the plugin executable at exe.
func ManifestPath(exe string) string { return exe + ManifestExt }

// maxManifest bounds a manifest file; a provider's Info is a few KiB.
const maxManifest = 64 << 10

// manifest is the file's form: the protocol's InfoReply, field for field.
type manifest struct {
	Protocol    int             `json:"protocol"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Version     string          `json:"version"`
	Caps        uint64          `json:"caps"`
	Locality    uint32          `json:"locality"`
	Progress    uint32          `json:"progress"`
	Order       uint32          `json:"order"`
	ThreadSafe  bool            `json:"thread_safe"`
	MaxMsgSize  int64           `json:"max_msg_size"`
	InjectSize  int64           `json:"inject_size"`
	Preference  int32           `json:"preference"`
	Atomics     []uint32        `json:"atomics"`
	Params      []manifestParam `json:"params"`
}

type manifestParam struct {
	Name    string `json:"name"`
	Env     string `json:"env"`
	Default string `json:"default"`
	Help    string `json:"help"`
}

// encodeManifest is the manifest of a provider's Info.
func encodeManifest(in core.Info) []byte {
	r := encodeInfo(in)
	m := manifest{Protocol: ProtocolVersion, Name: r.Name, Description: r.Description, Version: r.Version,
		Caps: r.Caps, Locality: r.Locality, Progress: r.Progress, Order: r.Order, ThreadSafe: r.ThreadSafe,
		MaxMsgSize: r.MaxMsgSize, InjectSize: r.InjectSize, Preference: r.Preference, Atomics: r.Atomics,
		Params: []manifestParam{}}
	for _, p := range r.Params {
		m.Params = append(m.Params, manifestParam{Name: p.Name, Env: p.Env, Default: p.Default, Help: p.Help})
	}
	b, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		panic("plugin: encoding a manifest: " + err.Error()) // plain fields: cannot fail
	}
	return append(b, '\n')
}

// decodeManifest checks and converts a manifest, as decodeInfo checks a
// plugin's answer: a manifest is another program's word.
func decodeManifest(b []byte) (core.Info, error) {
	if len(b) > maxManifest {
		return core.Info{}, fmt.Errorf("manifest of more than %d bytes: %w", maxManifest, core.ErrInvalid)
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return core.Info{}, fmt.Errorf("manifest: %v: %w", err, core.ErrInvalid)
	}
	if dec.More() {
		return core.Info{}, fmt.Errorf("manifest: data after the object: %w", core.ErrInvalid)
	}
	if m.Protocol != ProtocolVersion {
		return core.Info{}, fmt.Errorf("manifest of protocol %d, this program speaks %d: %w", m.Protocol, ProtocolVersion, core.ErrInvalid)
	}
	r := &pb.InfoReply{Name: m.Name, Description: m.Description, Version: m.Version, Caps: m.Caps,
		Locality: m.Locality, Progress: m.Progress, Order: m.Order, ThreadSafe: m.ThreadSafe,
		MaxMsgSize: m.MaxMsgSize, InjectSize: m.InjectSize, Preference: m.Preference, Atomics: m.Atomics}
	for _, p := range m.Params {
		r.Params = append(r.Params, &pb.Param{Name: p.Name, Env: p.Env, Default: p.Default, Help: p.Help})
	}
	in, err := decodeInfo(r)
	if err != nil {
		return core.Info{}, fmt.Errorf("manifest: %w", err)
	}
	return in, nil
}

// readManifest reads the manifest beside the executable at exe. A
// manifest older than its executable describes another build: it is
// refused, as a missing one is.
func readManifest(exe string) (core.Info, error) {
	path := ManifestPath(exe)
	f, err := os.Open(path)
	if err != nil {
		return core.Info{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return core.Info{}, err
	case !st.Mode().IsRegular():
		return core.Info{}, fmt.Errorf("%s is not a regular file: %w", path, core.ErrInvalid)
	}
	if xst, err := os.Stat(exe); err == nil && xst.ModTime().After(st.ModTime()) {
		return core.Info{}, fmt.Errorf("%s is older than its executable: %w", path, core.ErrInvalid)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxManifest+1))
	if err != nil {
		return core.Info{}, err
	}
	in, err := decodeManifest(b)
	if err != nil {
		return core.Info{}, fmt.Errorf("%s: %w", path, err)
	}
	return in, nil
}

// writeManifest writes in as the manifest of the executable at exe,
// through a temporary file renamed into place, so a reader sees the old
// manifest or the new one, never half of one.
func writeManifest(exe string, in core.Info) (string, error) {
	path := ManifestPath(exe)
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(encodeManifest(in))
	err = errors.Join(err, tmp.Chmod(0o644), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return path, nil
}

// WriteManifest writes the manifest of the plugin provider p beside its
// executable, from what the plugin said when a domain last opened on it
// (provinfo -check opens one). It returns the manifest's path.
func WriteManifest(p core.Provider) (string, error) {
	pp, ok := p.(*provider)
	if !ok {
		return "", fmt.Errorf("provider %q is not a plugin: %w", p.Name(), core.ErrInvalid)
	}
	pp.mu.Lock()
	in, ok := pp.live, pp.hasLive
	pp.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("plugin %s has not been started: open a domain on it first: %w", pp.name, core.ErrInvalid)
	}
	return writeManifest(pp.path, in)
}

// IsPlugin reports whether p is a plugin provider of this package.
func IsPlugin(p core.Provider) bool {
	_, ok := p.(*provider)
	return ok
}

// printManifest is what a plugin run with ManifestFlag does.
func printManifest(w io.Writer, p core.Provider) error {
	_, err := w.Write(encodeManifest(p.Info()))
	return err
}
