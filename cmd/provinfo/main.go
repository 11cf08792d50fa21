// Command provinfo lists goshmem's providers and what they can do, as
// fi_info does for libfabric and ucx_info -d for UCX.
//
//	provinfo                 one line per provider
//	provinfo -p tcp -v       every attribute of one provider
//	provinfo -e              every environment variable, with kind, default,
//	                         owner and help (-markdown: the README's table)
//	provinfo -json           the same, for machines
//	provinfo -check NAME     a quick self-test of one provider: two PEs
//	                         put, get and fetch-add, with timings
//
// Plugin providers (executables named goshmem-provider-NAME in the
// directories of GOSHMEM_PROVIDER_PATH) are listed beside the built-in
// ones, with what their manifests (goshmem-provider-NAME.json beside the
// executable) say they offer; listing starts none of them. -check NAME
// starts the plugin, bounded by GOSHMEM_PLUGIN_START_TIMEOUT, and once the
// self-test passed writes its manifest.
//
// Exit status: 0 on success; 1 on failure (a named provider is unknown,
// the self-test failed, output could not be written); 2 on a usage error.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/bootstrap/pmix"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/version"
	"github.com/goshmem/goshmem/providers/plugin"

	// Every package that declares variables (core.Declare), so that -e
	// lists them all: the C library's and oshcc's, oshrun's, shmem's (and
	// through it the bootstrap's), the providers'.
	_ "github.com/goshmem/goshmem/capi/cenv"
	_ "github.com/goshmem/goshmem/launcher"
	_ "github.com/goshmem/goshmem/providers/all"
	_ "github.com/goshmem/goshmem/shmem"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("provinfo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("p", "", "show only the named provider")
	verbose := fs.Bool("v", false, "show every attribute")
	env := fs.Bool("e", false, "list every environment variable with its default and help")
	asJSON := fs.Bool("json", false, "print JSON")
	markdown := fs.Bool("markdown", false, "with -e: print the variables as the README's Markdown table")
	showVer := fs.Bool("version", false, "print goshmem's version and exit")
	check := fs.String("check", "", "run a quick self-test of the named provider (two PEs: open, put, get, fetch-add) and print pass or fail with timings")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: provinfo [-p NAME] [-v] [-e [-markdown]] [-json] | provinfo -check NAME")
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nPlugins are found in the directories of %s.\n", core.EnvProviderPath)
		fmt.Fprintln(stderr, "Exit status: 0 success; 1 failure (unknown provider, failed self-test, output error); 2 usage error.")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVer {
		fmt.Fprintln(stdout, version.Line("provinfo"))
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "provinfo: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if *markdown && (!*env || *asJSON || *name != "") {
		fmt.Fprintln(stderr, "provinfo: -markdown goes with -e alone")
		fs.Usage()
		return 2
	}
	if *check != "" {
		if *name != "" || *verbose || *env || *asJSON || *markdown {
			fmt.Fprintln(stderr, "provinfo: -check takes no other flag")
			fs.Usage()
			return 2
		}
		p, err := core.Lookup(*check)
		if err == nil {
			err = selfCheck(stdout, p)
		}
		if err != nil {
			fmt.Fprintln(stderr, "provinfo:", err)
			return 1
		}
		if plugin.IsPlugin(p) {
			// What the plugin said it offers, for listings that start nothing.
			path, err := plugin.WriteManifest(p)
			if err != nil {
				fmt.Fprintln(stderr, "provinfo: the self-test passed, but the plugin's manifest could not be written:", err)
				return 1
			}
			fmt.Fprintln(stdout, "manifest written:", path)
		}
		return 0
	}
	providers := core.Providers()
	if !*env {
		providers = append(providers, composites(providers)...)
	}
	if *name != "" {
		p, err := lookup(*name)
		if err != nil {
			fmt.Fprintln(stderr, "provinfo:", err)
			return 1
		}
		providers = []core.Provider{p}
	}
	// Info starts nothing: a plugin's comes from its manifest.
	infos := make([]core.Info, len(providers))
	for i, p := range providers {
		infos[i] = p.Info()
	}
	var err error
	switch {
	case *env && *asJSON:
		err = writeJSON(stdout, envList(infos, *name == ""))
	case *env && *markdown:
		err = printMarkdown(stdout, envList(nil, true))
	case *env:
		err = printEnv(stdout, envList(infos, *name == ""))
	case *asJSON:
		views := make([]infoView, len(infos))
		for i, in := range infos {
			views[i] = view(in)
		}
		err = writeJSON(stdout, views)
	case *verbose:
		err = printVerbose(stdout, infos)
	default:
		err = printTable(stdout, infos)
		if err == nil && *name == "" {
			err = printLaunchers(stdout)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "provinfo:", err)
		return 1
	}
	return 0
}

// infoView is the JSON form of core.Info: names instead of bit sets.
type infoView struct {
	Name        string              `json:"name"`
	Description string              `json:"description"`
	Version     string              `json:"version,omitempty"`
	Origin      string              `json:"origin"`
	Caps        []string            `json:"caps"`
	Atomics     map[string][]string `json:"atomics"`
	Locality    string              `json:"locality"`
	Progress    string              `json:"progress"`
	Order       string              `json:"order"`
	ThreadSafe  bool                `json:"thread_safe"`
	MaxMsgSize  int                 `json:"max_msg_size"`
	InjectSize  int                 `json:"inject_size"`
	Preference  int                 `json:"preference"`
	Params      []paramView         `json:"params"`
}

type paramView struct {
	Env      string `json:"env"`
	Kind     string `json:"kind"`
	Default  string `json:"default"`
	Help     string `json:"help"`
	Owner    string `json:"owner"`
	Secret   bool   `json:"secret,omitempty"`
	Provider string `json:"provider,omitempty"`
}

// paramOf is p's view; provider names the provider whose parameter it is.
func paramOf(p core.Param, provider string) paramView {
	owner := p.Owner
	if owner == "" && provider != "" {
		owner = "providers/" + provider
	}
	if provider == "" {
		provider, _ = strings.CutPrefix(owner, "providers/")
		if provider == owner {
			provider = ""
		}
	}
	return paramView{Env: p.Env, Kind: p.Kind.String(), Default: p.Default, Help: p.Help, Owner: owner, Secret: p.Secret, Provider: provider}
}

func view(in core.Info) infoView {
	v := infoView{
		Name: in.Name, Description: in.Description, Version: in.Version, Origin: in.Origin,
		Caps: in.Caps.Names(), Atomics: map[string][]string{}, Locality: in.Locality.String(),
		Progress: in.Progress.String(), Order: in.Order.String(), ThreadSafe: in.ThreadSafe,
		MaxMsgSize: in.MaxMsgSize, InjectSize: in.InjectSize, Preference: in.Preference,
		Params: []paramView{},
	}
	if v.Caps == nil {
		v.Caps = []string{}
	}
	for _, t := range in.Atomics.Types() {
		v.Atomics[t.String()] = strings.Split(in.Atomics[t].String(), ",")
	}
	for _, p := range in.Params {
		v.Params = append(v.Params, paramOf(p, in.Name))
	}
	return v
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printLaunchers says which launcher interfaces this program speaks, and
// whether PMIx's library loads here (GOSHMEM_PMIX_LIB names another).
func printLaunchers(w io.Writer) error {
	pmixLine := "available: " + pmix.Library(os.LookupEnv)
	if v, err := pmix.Available(os.LookupEnv); err != nil {
		pmixLine = "not available: " + strings.TrimPrefix(err.Error(), "pmix: ")
	} else if v != "" {
		pmixLine += ", " + v
	}
	_, err := fmt.Fprintf(w, "\nLaunchers: oshrun; MPICH's mpiexec (PMI-1); srun --mpi=pmi2 (PMI-2); Open MPI's mpirun and srun --mpi=pmix (PMIx); any other with %s\nPMIx: %s\n",
		bootstrap.EnvBootstrap, pmixLine)
	return err
}

func printTable(w io.Writer, infos []core.Info) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tLOCALITY\tCAPABILITIES\tORIGIN\tDESCRIPTION")
	for _, in := range infos {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", in.Name, in.Locality, in.Caps, originKind(in.Origin), in.Description)
	}
	return tw.Flush()
}

// originKind is the first word of an origin: "built-in" or "plugin" (the
// path and protocol follow in -v and -json).
func originKind(origin string) string {
	kind, _, _ := strings.Cut(origin, " ")
	if kind == "" {
		return "-"
	}
	return kind
}

func sizeOrUnbounded(n int) string {
	if n == core.Unbounded {
		return "unbounded"
	}
	return core.FormatSize(int64(n))
}

func printVerbose(w io.Writer, infos []core.Info) error {
	for i, in := range infos {
		if i > 0 {
			fmt.Fprintln(w)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		row := func(k, v string) { fmt.Fprintf(tw, "  %s:\t%s\n", k, v) }
		fmt.Fprintf(tw, "provider: %s\n", in.Name)
		row("description", in.Description)
		if in.Version != "" {
			row("version", in.Version)
		}
		row("origin", in.Origin)
		row("capabilities", in.Caps.String())
		row("locality", in.Locality.String())
		row("progress", in.Progress.String())
		row("ordering", in.Order.String())
		row("thread safe", fmt.Sprint(in.ThreadSafe))
		row("max message", sizeOrUnbounded(in.MaxMsgSize))
		row("inject size", sizeOrUnbounded(in.InjectSize))
		pref := fmt.Sprint(in.Preference)
		if in.Preference == 0 {
			pref = "0 (used only when named)"
		}
		row("preference", pref)
		for _, t := range in.Atomics.Types() {
			row("atomics "+t.String(), in.Atomics[t].String())
		}
		for _, p := range in.Params {
			row("param "+p.Env, fmt.Sprintf("%s (default %s)", p.Help, p.Default))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// envList gathers the variables to list: with all, the whole registry
// (core.Settings: every declared variable and the built-in providers'
// parameters) and the parameters of the plugins among infos; else the
// parameters of the providers infos describe.
func envList(infos []core.Info, all bool) []paramView {
	var out []paramView
	if all {
		for _, p := range core.Settings() {
			out = append(out, paramOf(p, ""))
		}
		// Plugins' parameters, from their manifests.
		for _, in := range infos {
			if in.Origin != core.BuiltIn {
				for _, p := range in.Params {
					out = append(out, paramOf(p, in.Name))
				}
			}
		}
		return out
	}
	for _, in := range infos {
		for _, p := range in.Params {
			out = append(out, paramOf(p, in.Name))
		}
	}
	return out
}

func printEnv(w io.Writer, vars []paramView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tKIND\tDEFAULT\tOWNER\tHELP")
	for _, v := range vars {
		def := v.Default
		if def == "" {
			def = "(unset)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.Env, v.Kind, def, v.Owner, v.Help)
	}
	return tw.Flush()
}

// printMarkdown prints vars as the README's table (README.md,
// "Environment"), which a test keeps equal to this output.
func printMarkdown(w io.Writer, vars []paramView) error {
	cell := strings.NewReplacer("|", "\\|", "\n", " ").Replace
	var b strings.Builder
	b.WriteString("| Variable | Kind | Default | Read by | Meaning |\n|---|---|---|---|---|\n")
	for _, v := range vars {
		def := "unset"
		if v.Default != "" {
			def = "`" + v.Default + "`"
			if strings.HasPrefix(v.Default, "(") {
				def = strings.Trim(v.Default, "()")
			}
		}
		help := cell(v.Help)
		if v.Secret {
			help += " (a secret: listings say whether it is set, never what it holds)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", v.Env, v.Kind, cell(def), v.Owner, help)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
