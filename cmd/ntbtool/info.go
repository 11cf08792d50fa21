package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/ntb/emu"
)

func runInfo(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ntbtool info", flag.ContinueOnError)
	fs.SetOutput(stderr)
	job := fs.String("job", "", "the job's directory, or its id")
	host := fs.Int("host", -1, "the host whose port to show")
	side := fs.String("side", "right", `the port: "left" (towards host-1) or "right" (towards host+1)`)
	tag := fs.String("tag", "", "the ring's tag (default: the only ring in the directory)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *job == "" || *host < 0 {
		return usageError{"info needs -job DIR and -host H (0 or more)"}
	}
	var s ntb.Side
	switch strings.ToLower(*side) {
	case "left":
		s = ntb.Left
	case "right":
		s = ntb.Right
	default:
		return usageError{fmt.Sprintf(`-side %q: allowed "left" or "right"`, *side)}
	}
	dir := *job
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = core.JobDir(nil, *job)
	}
	if !flagSet(fs, "tag") {
		tags, err := emu.Tags(dir)
		if err != nil {
			return err
		}
		switch len(tags) {
		case 0:
			return fmt.Errorf("no ring's link files in %s", dir)
		case 1:
			*tag = tags[0]
		default:
			return usageError{fmt.Sprintf("%s holds several rings; choose one with -tag (%q)", dir, tags)}
		}
	}
	snap, err := emu.Inspect(dir, *tag, *host, s)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, snap)
	}
	return printSnapshot(stdout, snap)
}

func printSnapshot(w io.Writer, s emu.Snapshot) error {
	state := "down"
	if s.Up {
		state = "up"
	}
	fmt.Fprintf(w, "host %d %s port: link %d of a ring of %d hosts, %s (forced down: %v, downs so far: %d)\n",
		s.Host, s.Side, s.Link, s.Hosts, state, yesNo(s.ForcedDown), s.Downs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, f func(SideState emu.SideState) string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, f(s.Own), f(s.Peer))
	}
	fmt.Fprintf(tw, "\tthis side\tpeer side\n")
	row("holder", func(x emu.SideState) string {
		switch {
		case x.Killed:
			return "killed"
		case x.PID == 0:
			return "none"
		case x.Alive:
			return fmt.Sprintf("pid %d (alive)", x.PID)
		}
		return fmt.Sprintf("pid %d (gone)", x.PID)
	})
	row("link enabled", func(x emu.SideState) string { return yesNo(x.Enabled) })
	row("heartbeat", func(x emu.SideState) string { return fmt.Sprint(x.Heartbeat) })
	for i := range s.Own.Spads {
		row(fmt.Sprintf("spad %d", i), func(x emu.SideState) string { return fmt.Sprintf("0x%08x", x.Spads[i]) })
	}
	row("doorbell pending", func(x emu.SideState) string { return fmt.Sprintf("0x%04x", x.DBPending) })
	row("doorbell mask", func(x emu.SideState) string { return fmt.Sprintf("0x%04x", x.DBMask) })
	for i := range s.Own.Windows {
		row(fmt.Sprintf("inbound window %d", i), func(x emu.SideState) string {
			if x.Windows[i].Gen == 0 {
				return "not translated"
			}
			return fmt.Sprintf("%s (translation %d)", core.FormatSize(int64(x.Windows[i].Size)), x.Windows[i].Gen)
		})
	}
	st := func(f func(ntb.Stats) uint64) func(emu.SideState) string {
		return func(x emu.SideState) string { return fmt.Sprint(f(x.Stats)) }
	}
	row("doorbells sent", st(func(c ntb.Stats) uint64 { return c.DoorbellsSent }))
	row("doorbell events", st(func(c ntb.Stats) uint64 { return c.DoorbellEvents }))
	row("spad reads/writes", func(x emu.SideState) string {
		return fmt.Sprintf("%d/%d", x.Stats.SpadReads, x.Stats.SpadWrites)
	})
	row("peer spad reads/writes", func(x emu.SideState) string {
		return fmt.Sprintf("%d/%d", x.Stats.PeerSpadReads, x.Stats.PeerSpadWrites)
	})
	row("DMA descriptors", st(func(c ntb.Stats) uint64 { return c.DMADescriptors }))
	row("DMA bytes", st(func(c ntb.Stats) uint64 { return c.DMABytes }))
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// flagSet reports whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
