package plugin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/sys"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// regionFile names the file of region id handed to the PE.
func regionFile(id uint32) string { return fmt.Sprintf("r%d", id) }

// NewRegion implements the protocol's NewRegion. This PE's part of the
// region must be memory the PE can map too, so the plugin creates it as a
// shared file of the job directory and hands the provider its mapping: a
// provider that can place a region in given memory (core.RegionPlacer)
// makes the region there; any other registers it (core.Domain's
// RegisterRegion, as for memory a program already has), and a provider
// that moves registered memory onto a file of its own (loopback) is
// captured. Either way the reply names the file of this PE's part, for
// the PE to map.
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
		r, path, err = s.placeRegistered(d, id, int(req.Size))
	}
	if err != nil {
		if r != nil {
			// It exists on every PE, but this one cannot use it.
			s.mu.Lock()
			s.regions = append(s.regions, r)
			s.mu.Unlock()
		}
		return &pb.NewRegionReply{Err: encodeErr(err)}, nil
	}
	s.mu.Lock()
	s.regions = append(s.regions, r)
	s.mu.Unlock()
	return &pb.NewRegionReply{Id: id, Size: req.Size, Path: path}, nil
}

// pageRound is size rounded up to whole pages: a region's file is, since
// only whole pages can be registered; the PE maps the whole file, and its
// bounds checks allow the region's size.
func pageRound(size int) int {
	page := os.Getpagesize()
	if size <= 0 || size > math.MaxInt-page {
		return size
	}
	return (size + page - 1) &^ (page - 1)
}

// sharedFile creates the file of this PE's part of region id, of size
// rounded up to whole pages, and maps it whole. Whether every PE got its file is agreed before the provider's
// collective starts, so a PE that failed never leaves the others waiting
// in it.
func (s *server) sharedFile(id uint32, size int) ([]byte, string, error) {
	var mem []byte
	var path string
	var err error
	switch {
	case size < 0:
		err = fmt.Errorf("size %d: %w", size, core.ErrInvalid)
	case size > 0:
		if path, err = s.capture.holdPath(regionFile(id)); err == nil {
			mem, err = sys.CreateShared(path, pageRound(size))
		}
	}
	if err = core.Agree(s.boot, err); err != nil {
		if mem != nil {
			err = errors.Join(err, sys.Unmap(mem), os.Remove(path))
		}
		return nil, "", err
	}
	return mem, path, nil
}

// placeRegistered makes a region of a provider that cannot place one:
// the shared file's mapping is registered with it. A network provider
// (tcp) leaves registered memory where it is, so the PE maps the file
// the plugin created; one that moves it onto a file of its own, as
// loopback does, is captured, and that file is handed over instead.
func (s *server) placeRegistered(d core.Domain, id uint32, size int) (core.Region, string, error) {
	mem, path, err := s.sharedFile(id, size)
	if err != nil {
		return nil, "", err
	}
	var ino uint64
	if mem != nil {
		ino, err = inodeAt(mem)
	}
	// Every PE has its file, or all stop here.
	if err = core.Agree(s.boot, err); err != nil {
		if mem != nil {
			err = errors.Join(err, sys.Unmap(mem), os.Remove(path))
		}
		return nil, "", err
	}
	s.capture.begin()
	r, err := d.RegisterRegion(mem)
	if err != nil || mem == nil {
		s.capture.abort()
		if mem != nil {
			err = errors.Join(err, sys.Unmap(mem), os.Remove(path))
		}
		return r, "", err
	}
	// From here mem is the region's, and the wrapped Close lets go of it.
	s.mu.Lock()
	s.placed = append(s.placed, mem)
	s.mu.Unlock()
	if now, err := inodeAt(r.Local()); err == nil && now == ino {
		s.capture.abort()
		return r, path, nil
	}
	os.Remove(path) // moved: the provider's own file holds it now
	claimed, err := s.capture.claim(r.Local(), id)
	return r, claimed, err
}

// placeRegion has a provider that can place a region make it in the
// mapping of the shared file.
func (s *server) placeRegion(p core.RegionPlacer, id uint32, size int) (core.Region, string, error) {
	mem, path, err := s.sharedFile(id, size)
	if err != nil {
		return nil, "", err
	}
	r, err := p.NewRegionAt(mem[:size:size])
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
