package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/sys"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
	"github.com/goshmem/goshmem/providers/provkit"
)

// domain is a PE's domain on a plugin provider. Its plugin process holds
// the wrapped provider's domain; the session stream carries the job's
// bootstrap to it for as long as the domain lives.
type domain struct {
	p    *provider
	proc *proc
	info core.Info
	boot core.Bootstrap
	set  settings
	dir  string // the job directory: region and staging files live there
	rank int
	npes int

	session  pb.Provider_SessionClient
	endSess  context.CancelFunc
	sessDone chan struct{} // closed when the session stream ends
	sessErr  error         // why; read after sessDone
	opened   chan error
	waiter   bool // the wrapped domain is a core.LocalWaiter; set before opened is sent

	// inBoot is set while the plugin waits for the job's bootstrap on its
	// behalf; active is when it last did (Unix nanoseconds). Collectives
	// time the plugin by them (see collective).
	inBoot atomic.Bool
	active atomic.Int64

	// broken is the first error that made the plugin unusable (it died or
	// hung); Close then ends the process without asking it anything.
	broken atomic.Pointer[error]
	// lost is set with broken when the plugin process is found gone (see
	// fail): the error every later call returns.
	lost atomic.Pointer[error]

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	mu        sync.Mutex // guards the fields below
	regions   []*region
	endpoints map[*endpoint]struct{}
}

var (
	_ core.Domain = (*domain)(nil)
	_ core.Failer = (*domain)(nil)
)

// openDomain starts the plugin process, asks what it offers and opens the
// wrapped provider in it. Starting is agreed on by every PE before the collective open
// begins, so a plugin that fails to start on one PE fails the open on all.
func openDomain(p *provider, cfg *core.Config, set settings, dir string) (core.Domain, error) {
	b := cfg.Bootstrap
	pr, err := start(p.name, p.path, set.start, set.timeout, dir)
	var info core.Info
	if err == nil {
		info, err = p.ask(pr)
	}
	if err := core.Agree(b, err); err != nil {
		if pr != nil {
			pr.kill()
		}
		return nil, err
	}
	d := &domain{p: p, proc: pr, info: info, boot: b, set: set, dir: dir,
		rank: b.Rank(), npes: b.Size(), sessDone: make(chan struct{}), opened: make(chan error, 1),
		endpoints: map[*endpoint]struct{}{}}
	ctx, cancel := context.WithCancel(context.Background())
	d.endSess = cancel
	if err := d.open(ctx, cfg); err != nil {
		cancel()
		pr.kill()
		return nil, err
	}
	if d.waiter {
		return waitingDomain{d}, nil
	}
	return d, nil
}

func (d *domain) open(ctx context.Context, cfg *core.Config) error {
	host := cfg.HostID
	if host == "" {
		host = core.HostID(cfg.Lookup)
	}
	req := &pb.OpenRequest{Rank: int32(d.rank), Size: int32(d.npes), JobId: cfg.JobID, Secret: cfg.Secret,
		HostId: host, Env: map[string]string{}}
	// The plugin reads the environment as this PE's configuration sees it:
	// tests set it per PE, so the process environment is not enough.
	for _, k := range append([]string{core.EnvShmDir}, paramEnvs(d.info)...) {
		if v, ok := cfg.Lookup(k); ok {
			req.Env[k] = v
		}
	}
	var err error
	if d.session, err = d.proc.rpc.Session(ctx); err != nil {
		return d.fail("open", err)
	}
	if err := d.session.Send(&pb.HostMsg{Msg: &pb.HostMsg_Open{Open: req}}); err != nil {
		return d.fail("open", err)
	}
	go d.serveSession()
	return d.collective("open", func(wctx context.Context) error {
		select {
		case err := <-d.opened:
			return err
		case <-d.sessDone:
			select {
			case err := <-d.opened: // the result came just before the end
				return err
			default:
				return d.fail("open", d.sessErr)
			}
		case <-wctx.Done():
			return wctx.Err()
		}
	})
}

// collective runs one collective call of the plugin: open, new region or
// close. How long it takes depends on the other PEs, so the plugin's
// timeout bounds only the time the plugin spends on it outside the job's
// bootstrap: a plugin that goes longer than that without a bootstrap
// call, and without answering, is reported hung. f's context is
// cancelled then.
func (d *domain) collective(op string, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.active.Store(time.Now().UnixNano())
	var late atomic.Bool
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		t := time.NewTicker(d.set.timeout / 8)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				idle := time.Duration(time.Now().UnixNano() - d.active.Load())
				if !d.inBoot.Load() && idle > d.set.timeout {
					late.Store(true)
					cancel()
					return
				}
			}
		}
	}()
	err := f(ctx)
	close(stop)
	<-watched
	if err != nil && late.Load() {
		err = d.proc.fail(op, fmt.Errorf("no answer within %v outside the job's bootstrap: %w", d.set.timeout, core.ErrTimeout))
		d.broken.CompareAndSwap(nil, &err)
	}
	return err
}

func paramEnvs(in core.Info) []string {
	out := make([]string, len(in.Params))
	for i, p := range in.Params {
		out[i] = p.Env
	}
	return out
}

// serveSession answers the plugin's bootstrap calls with this PE's
// bootstrap until the session ends.
func (d *domain) serveSession() {
	defer close(d.sessDone)
	for {
		m, err := d.session.Recv()
		if err != nil {
			d.sessErr = err
			if !d.closed.Load() {
				// Nobody ended it: the plugin process died or its
				// connection broke while the domain was open.
				d.fail("session", err)
			}
			return
		}
		switch m := m.Msg.(type) {
		case *pb.PluginMsg_Boot:
			reply := &pb.BootReply{}
			var err error
			d.inBoot.Store(true)
			switch m.Boot.GetKind() {
			case pb.BootCall_ALLGATHER:
				reply.Data, err = d.boot.Allgather(m.Boot.Data)
			case pb.BootCall_BARRIER:
				err = d.boot.Barrier()
			default:
				d.sessErr = garbage("bootstrap call of kind %v", m.Boot.GetKind())
				return
			}
			d.active.Store(time.Now().UnixNano())
			d.inBoot.Store(false)
			reply.Err = encodeErr(err)
			if err := d.session.Send(&pb.HostMsg{Msg: &pb.HostMsg_Boot{Boot: reply}}); err != nil {
				d.sessErr = err
				return
			}
		case *pb.PluginMsg_Opened:
			err, derr := decodeErr(m.Opened.Err)
			if derr != nil {
				d.sessErr = garbage("open result: %v", derr)
				return
			}
			if err != nil {
				err = provkit.Err(d.p.name, "open", -1, err)
			}
			d.waiter = m.Opened.Waiter
			select {
			case d.opened <- err:
			default:
				d.sessErr = garbage("a second open result")
				return
			}
		default:
			d.sessErr = garbage("session message %T", m)
			return
		}
	}
}

// fail is proc.fail for this PE's domain. A plugin process that is gone
// (it died, or its connection broke) is this PE's provider lost: the
// error becomes a *core.PeerLostError naming this PE, inside an *Error
// naming the plugin; every later call of the domain and its endpoints
// fails with it, and the job's bootstrap is told (core.ReportLost), so
// that the other PEs, and the launcher, stop waiting for this one.
func (d *domain) fail(op string, err error) error {
	err = d.proc.fail(op, err)
	if !errors.Is(err, core.ErrPeerLost) {
		return err
	}
	if lost := d.lostErr(); lost != nil {
		return lost
	}
	var pe *Error
	why := err.Error()
	if errors.As(err, &pe) {
		why = pe.Err.Error()
	}
	var lost error = &Error{Name: d.p.name, Path: d.p.path, Op: op, Err: &core.PeerLostError{PE: d.rank,
		Reason: fmt.Sprintf("its provider process, plugin %s (%s), is gone: %s", d.p.name, d.p.path, why)}}
	if !d.lost.CompareAndSwap(nil, &lost) {
		return *d.lost.Load()
	}
	d.broken.CompareAndSwap(nil, &lost)
	core.ReportLost(d.boot, lost)
	return lost
}

// lostErr is the error of a plugin process found gone, or nil.
func (d *domain) lostErr() error {
	if p := d.lost.Load(); p != nil {
		return *p
	}
	return nil
}

// Err implements core.Failer: once this PE's plugin process is found
// gone, the domain can carry nothing more, and waits on memory (which
// poll Err) end with the error naming the plugin.
func (d *domain) Err() error { return d.lostErr() }

func (d *domain) Rank() int { return d.rank }
func (d *domain) Size() int { return d.npes }

func (d *domain) opErr(op string, err error) error {
	return provkit.Err(d.p.name, op, -1, err)
}

// region is a symmetric region of a plugin domain. Local is this PE's part
// as mapped here from the file the plugin handed over: the same memory the
// wrapped provider's peers write into.
type region struct {
	dom   *domain
	id    uint32
	size  int
	local []byte
	// mapped is the whole mapping local is the start of, unmapped at
	// Close; nil for a registered region.
	mapped []byte
	// registered: local is the program's memory (RegisterRegion), shared
	// in place; it is given back at Close, never unmapped.
	registered bool
}

func (r *region) Local() []byte {
	if r.dom.closed.Load() {
		return nil
	}
	return r.local
}

// NewRegion implements core.Domain. The plugin creates the region with
// the wrapped provider and hands over the file of this PE's part, which
// is mapped here and its name removed. Collectives are bounded by the
// job's bootstrap, not by the plugin's timeout: a slow peer is no hang.
func (d *domain) NewRegion(size int) (core.Region, error) {
	if d.closed.Load() {
		return nil, d.opErr("new region", core.ErrClosed)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var r *pb.NewRegionReply
	err := d.collective("new region", func(ctx context.Context) (err error) {
		r, err = d.proc.rpc.NewRegion(ctx, &pb.NewRegionRequest{Size: int64(size)})
		return err
	})
	if err != nil {
		return nil, d.fail("new region", err)
	}
	rerr, derr := decodeErr(r.Err)
	if derr == nil && rerr == nil {
		derr = d.checkRegion(r, size)
	}
	if derr != nil {
		if r.Path != "" && d.inDir(r.Path) {
			os.Remove(r.Path)
		}
		return nil, d.proc.fail("new region", garbage("region reply: %v", derr))
	}
	if rerr != nil {
		return nil, d.opErr("new region", rerr)
	}
	reg := &region{dom: d, id: r.Id, size: size}
	if r.Path != "" {
		// The file is whole pages (see pageRound); the region is size
		// bytes of it.
		reg.mapped, err = sys.OpenShared(r.Path, pageRound(size))
		err = errors.Join(err, os.Remove(r.Path))
		if err != nil {
			return nil, d.opErr("new region", errors.Join(fmt.Errorf("map the region's file from the plugin: %w", err), sys.Unmap(reg.mapped)))
		}
		reg.local = reg.mapped[:size:size]
	}
	d.regions = append(d.regions, reg)
	return reg, nil
}

// RegisterRegion implements core.Domain. The plugin process must reach
// mem, so mem moves in place onto a file of the job directory
// (sys.ShareInPlace: same address, same contents), which the plugin maps
// and registers with the wrapped provider. If that provider moved the
// plugin's mapping onto a file of its own, as loopback does, the reply
// names it and it is mapped over mem in turn, so mem is the very memory
// the provider's peers write. Close gives mem back to the program as
// private memory holding what it held.
func (d *domain) RegisterRegion(m []byte) (core.Region, error) {
	const op = "register region"
	if d.closed.Load() {
		return nil, d.opErr(op, core.ErrClosed)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id := len(d.regions)
	var path string
	err := core.CheckRegisterMem(m)
	if err == nil && len(m) > 0 {
		// "plugin-": the plugin's capture passes over it, as its own.
		path = filepath.Join(d.dir, fmt.Sprintf("plugin-reg-%d-pe%d-r%d", os.Getpid(), d.boot.Rank(), id))
		err = sys.ShareInPlace(path, m)
	}
	// All PEs ask the plugin, or none: a collective it started on some
	// PEs only would never end.
	if err = core.Agree(d.boot, err); err != nil {
		if path != "" {
			err = errors.Join(err, sys.Unshare(m), ignoreMissing(os.Remove(path)))
		}
		return nil, d.opErr(op, err)
	}
	reg, err := d.registerRemote(id, m, path)
	if path != "" {
		// The plugin has mapped it, or failed to: nobody opens it again.
		err = errors.Join(err, os.Remove(path))
		if err != nil && reg == nil {
			err = errors.Join(err, sys.Unshare(m))
		}
	}
	if err != nil {
		if reg != nil {
			// Registered on every PE, but this one cannot use it.
			d.regions = append(d.regions, reg)
		}
		return nil, err
	}
	d.regions = append(d.regions, reg)
	return reg, nil
}

// registerRemote is RegisterRegion's call to the plugin, with mem already
// on the file at path.
func (d *domain) registerRemote(id int, m []byte, path string) (*region, error) {
	const op = "register region"
	var r *pb.NewRegionReply
	err := d.collective(op, func(ctx context.Context) (err error) {
		r, err = d.proc.rpc.RegisterRegion(ctx, &pb.RegisterRegionRequest{Size: int64(len(m)), Path: path})
		return err
	})
	if err != nil {
		return nil, d.fail(op, err)
	}
	rerr, derr := decodeErr(r.Err)
	if derr == nil && rerr == nil {
		derr = d.checkRegistered(r, id, len(m))
	}
	if derr != nil {
		if r.Path != "" && d.inDir(r.Path) {
			os.Remove(r.Path)
		}
		return nil, d.proc.fail(op, garbage("region reply: %v", derr))
	}
	if rerr != nil {
		return nil, d.opErr(op, rerr)
	}
	reg := &region{dom: d, id: r.Id, size: len(m), local: m, registered: true}
	if r.Path != "" {
		err = errors.Join(sys.MapSharedAt(r.Path, m), os.Remove(r.Path))
		if err != nil {
			return reg, d.opErr(op, fmt.Errorf("map the region's file from the plugin over the registered memory: %w", err))
		}
	}
	return reg, nil
}

// checkRegistered validates a successful RegisterRegion reply: the next
// id, the size asked for, and if a file, one inside the job directory.
func (d *domain) checkRegistered(r *pb.NewRegionReply, id, size int) error {
	switch {
	case r.Id != uint32(id):
		return fmt.Errorf("region id %d, want %d", r.Id, id)
	case r.Size != int64(size):
		return fmt.Errorf("size %d, want %d", r.Size, size)
	case r.Path != "" && (size == 0 || !d.inDir(r.Path)):
		return fmt.Errorf("file %q for a registered region of %d bytes in the job directory %s", r.Path, size, d.dir)
	}
	return nil
}

func ignoreMissing(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// release lets go of this PE's part: a registered region's memory, the
// program's, becomes private again with its contents; any other mapping
// is retired (see core.Domain's Close).
func (r *region) release() error {
	if r.registered {
		if len(r.local) == 0 {
			return nil
		}
		return sys.Unshare(r.local)
	}
	return sys.Retire(r.mapped)
}

// checkRegion validates a successful NewRegion reply: the next id, the
// size asked for, and a file inside the job directory (never a file
// elsewhere that the plugin would have this PE map or remove).
func (d *domain) checkRegion(r *pb.NewRegionReply, size int) error {
	switch {
	case r.Id != uint32(len(d.regions)):
		return fmt.Errorf("region id %d, want %d", r.Id, len(d.regions))
	case r.Size != int64(size):
		return fmt.Errorf("size %d, want %d", r.Size, size)
	case (r.Path == "") != (size == 0):
		return fmt.Errorf("file %q for a region of %d bytes", r.Path, size)
	case r.Path != "" && !d.inDir(r.Path):
		return fmt.Errorf("file %q outside the job directory %s", r.Path, d.dir)
	}
	return nil
}

func (d *domain) inDir(path string) bool {
	rel, err := filepath.Rel(d.dir, filepath.Clean(path))
	return err == nil && filepath.IsAbs(path) && rel != "." && !strings.HasPrefix(rel, "..")
}

// NewEndpoint implements core.Domain: a stream to the plugin and a staging
// area both map.
func (d *domain) NewEndpoint(opts core.EndpointOptions) (core.Endpoint, error) {
	if d.closed.Load() {
		return nil, d.opErr("new endpoint", core.ErrClosed)
	}
	e, err := newEndpoint(d, opts)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Load() {
		return nil, errors.Join(d.opErr("new endpoint", core.ErrClosed), e.Close())
	}
	d.endpoints[e] = struct{}{}
	return e, nil
}

func (d *domain) forget(e *endpoint) {
	d.mu.Lock()
	delete(d.endpoints, e)
	d.mu.Unlock()
}

// Close implements core.Domain: it closes the endpoints, closes the
// wrapped domain in the plugin (collective), unmaps the regions and ends
// the plugin process. It is idempotent.
func (d *domain) Close() error {
	first := false
	d.closeOnce.Do(func() {
		first = true
		d.closeErr = d.close()
	})
	if first {
		return d.closeErr
	}
	return nil
}

func (d *domain) close() error {
	d.mu.Lock()
	d.closed.Store(true)
	eps := d.endpoints
	d.endpoints = map[*endpoint]struct{}{}
	regions := d.regions
	d.regions = nil
	d.mu.Unlock()

	var errs []error
	for e := range eps {
		errs = append(errs, e.Close())
	}
	broken := d.broken.Load()
	if broken != nil {
		errs = append(errs, *broken) // no use asking a dead or hung plugin
	} else {
		errs = append(errs, d.closeRemote())
	}
	for _, reg := range regions {
		errs = append(errs, reg.release())
	}
	_ = d.session.CloseSend()
	d.endSess()
	<-d.sessDone
	if broken == nil && d.sessErr != nil && !errors.Is(d.sessErr, io.EOF) && !isCanceled(d.sessErr) {
		errs = append(errs, d.proc.fail("close", d.sessErr))
	}
	d.proc.kill()
	// Open made this PE an owner of the job directory, where the
	// plugin's socket was; the last PE out removes the directory.
	errs = append(errs, core.LeaveJobDir(d.dir))
	return errors.Join(errs...)
}

// closeRemote closes the wrapped domain in the plugin.
func (d *domain) closeRemote() error {
	var r *pb.CloseReply
	err := d.collective("close", func(ctx context.Context) (err error) {
		r, err = d.proc.rpc.Close(ctx, &pb.CloseRequest{})
		return err
	})
	if err != nil {
		return d.fail("close", err)
	}
	rerr, derr := decodeErr(r.Err)
	if derr != nil {
		return d.proc.fail("close", garbage("close result: %v", derr))
	}
	if rerr != nil {
		return d.opErr("close", rerr)
	}
	return nil
}

func isCanceled(err error) bool { return status.Code(err) == codes.Canceled }
