package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/sys"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// regionFile names the file of region id handed to the PE.
func regionFile(id uint32) string { return fmt.Sprintf("r%d", id) }

// NewRegion implements the protocol's NewRegion. A provider that can
// place a region in given memory (core.RegionPlacer) gets a shared file
// the plugin creates; any other has its own file found by the capture.
// Either way the reply names the file of this PE's part, for the PE to map.
func (s *server) NewRegion(_ context.Context, req *pb.NewRegionRequest) (*pb.NewRegionReply, error) {
	d, err := s.domain()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	id := uint32(len(s.regions))
	s.mu.Unlock()
	var r core.Region
	var path string
	if p, ok := d.(core.RegionPlacer); ok {
		r, path, err = s.placeRegion(p, id, int(req.Size))
	} else {
		r, path, err = s.captureRegion(d, id, int(req.Size))
	}
	if err != nil {
		return &pb.NewRegionReply{Err: encodeErr(err)}, nil
	}
	s.mu.Lock()
	s.regions = append(s.regions, r)
	s.mu.Unlock()
	return &pb.NewRegionReply{Id: id, Size: req.Size, Path: path}, nil
}

// captureRegion has the provider make the region and finds its file.
func (s *server) captureRegion(d core.Domain, id uint32, size int) (core.Region, string, error) {
	s.capture.begin()
	r, err := d.NewRegion(size)
	if err != nil || len(r.Local()) == 0 {
		s.capture.abort()
		return r, "", err
	}
	// On failure the region exists on every PE, but this one cannot use it.
	path, err := s.capture.claim(r.Local(), id)
	return r, path, err
}

// placeRegion creates the file of this PE's part and has the provider
// make the region in its mapping. Whether every PE got its file is agreed
// before the provider's collective starts, so a PE that failed never
// leaves the others waiting in it.
func (s *server) placeRegion(p core.RegionPlacer, id uint32, size int) (core.Region, string, error) {
	var mem []byte
	var path string
	var err error
	if size > 0 {
		if path, err = s.capture.holdPath(regionFile(id)); err == nil {
			mem, err = sys.CreateShared(path, size)
		}
	}
	var r core.Region
	if err = core.Agree(s.boot, err); err == nil {
		r, err = p.NewRegionAt(mem)
	}
	if err == nil && size < 0 {
		err = fmt.Errorf("size %d: %w", size, core.ErrInvalid)
	}
	if err != nil {
		if mem != nil {
			err = errors.Join(err, sys.Unmap(mem), os.Remove(path))
		}
		return nil, "", err
	}
	if mem != nil {
		s.mu.Lock()
		s.placed = append(s.placed, mem)
		s.mu.Unlock()
	}
	return r, path, nil
}

// RegisterRegion implements the protocol's RegisterRegion: it maps the
// PE's file, whose mapping on the PE is the PE's own memory, and registers
// that mapping with the wrapped provider. A provider that moves memory it
// registers onto a file of its own (loopback, in place) gets captured as
// in NewRegion, and the reply names that file for the PE to map over its
// memory; one that leaves it where it is shares the PE's file already,
// and the reply names none.
func (s *server) RegisterRegion(_ context.Context, req *pb.RegisterRegionRequest) (*pb.NewRegionReply, error) {
	d, err := s.domain()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	id := uint32(len(s.regions))
	s.mu.Unlock()
	r, path, err := s.registerRegion(d, id, req)
	if err != nil {
		return &pb.NewRegionReply{Err: encodeErr(err)}, nil
	}
	s.mu.Lock()
	s.regions = append(s.regions, r)
	s.mu.Unlock()
	return &pb.NewRegionReply{Id: id, Size: req.Size, Path: path}, nil
}

func (s *server) registerRegion(d core.Domain, id uint32, req *pb.RegisterRegionRequest) (core.Region, string, error) {
	var m []byte
	var ino uint64
	var err error
	switch {
	case req.Size < 0 || (req.Size == 0) != (req.Path == ""):
		err = fmt.Errorf("register %d bytes in file %q: %w", req.Size, req.Path, core.ErrInvalid)
	case req.Size > 0:
		if m, err = sys.OpenShared(req.Path, int(req.Size)); err == nil {
			ino, err = inodeAt(m)
		}
	}
	// Every PE mapped its file, or all stop here: none waits in the
	// provider's collective for one that will not come.
	if err = core.Agree(s.boot, err); err != nil {
		return nil, "", errors.Join(err, sys.Unmap(m))
	}
	s.capture.begin()
	r, err := d.RegisterRegion(m)
	if err != nil || len(m) == 0 {
		s.capture.abort()
		return r, "", errors.Join(err, sys.Unmap(m))
	}
	// From here m is the region's, and the wrapped Close lets go of it.
	s.mu.Lock()
	s.placed = append(s.placed, m)
	s.mu.Unlock()
	if now, err := inodeAt(r.Local()); err == nil && now == ino {
		s.capture.abort()
		return r, "", nil
	}
	path, err := s.capture.claim(r.Local(), id)
	return r, path, err
}
