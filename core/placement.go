package core

// RegionPlacer is implemented by domains that can create a symmetric
// region whose local part is memory the caller provides, instead of memory
// of their own. A provider served through a plugin needs it unless it
// keeps its regions in files of the job directory: the plugin process
// maps a shared file for the PE's part and hands the provider the mapping,
// so the PE, mapping the same file, sees the very memory the provider's
// peers write.
type RegionPlacer interface {
	// NewRegionAt is NewRegion with this PE's part of the region in mem:
	// the region's size is len(mem). It is collective like NewRegion, and
	// every PE of a job creates a given region the same way (all with
	// NewRegion or all with NewRegionAt). mem stays valid until the domain
	// closes; the domain neither unmaps nor frees it, and must not touch
	// it once Close has returned. The caller aligns mem as Region.Local
	// promises, since mem becomes the region's Local.
	NewRegionAt(mem []byte) (Region, error)
}
