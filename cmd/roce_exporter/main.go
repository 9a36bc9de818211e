// Command roce_exporter exports RDMA/RoCE health metrics, checks a node
// against the cluster plan (doctor) and probes the fabric.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"

	"github.com/roce-exporter/roce_exporter/collector"
	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/reader"
)

// defaultListenAddress is outside the crowded 9100-9999 exporter band; 4791
// is the RoCE v2 UDP port.
const defaultListenAddress = ":14791"

// app holds the flags shared by every subcommand.
type app struct {
	kp         *kingpin.Application
	configFile *string
	nodeName   *string
	logConfig  *promslog.Config
	logger     *slog.Logger
	lang       *string
	// logLevelSet: --log.level was given, so a command's quieter default
	// does not apply.
	logLevelSet bool
}

func newApp() *app {
	a := &app{kp: kingpin.New("roce_exporter", "Prometheus exporter and health checker for RoCE v2 / InfiniBand GPU-cluster networks.")}
	a.kp.Version(version.Print("roce_exporter"))
	a.kp.HelpFlag.Short('h')
	a.kp.UsageTemplate(usageTemplate)
	a.configFile = a.kp.Flag("config.file", "Cluster plan (YAML): IP plan, expectations and probe settings. Optional for serving counters; required for plan checks and probes.").PlaceHolder("FILE").String()
	a.nodeName = a.kp.Flag("node.name", "Name of this node in the cluster plan (default: the short hostname).").String()
	a.lang = a.kp.Flag("lang", "Text and page language: en, zh-CN (default: LANG).").PlaceHolder("LANG").String()
	a.logConfig = &promslog.Config{}
	promslogflag.AddFlags(a.kp, a.logConfig)
	a.kp.GetFlag(promslogflag.LevelFlagName).IsSetByUser(&a.logLevelSet)
	return a
}

// quietLogs makes warn the default log level of a command whose output is
// a report for a person (doctor, plan init): the reader's start-up notes
// are not news to someone reading the report, its warnings (a file it had
// to skip) are. --log.level still sets any level.
func (a *app) quietLogs() {
	if !a.logLevelSet {
		a.logConfig.Level.Set("warn")
		a.logger = promslog.New(a.logConfig)
	}
}

// loadPlan loads --config.file, or returns nil when none is given.
func (a *app) loadPlan() (*config.Plan, error) {
	if *a.configFile == "" {
		return nil, nil
	}
	return config.Load(*a.configFile)
}

// options turns a command's collector flags into the collectors' options
// (with the plan the health checks compare against) and the reader's.
func (a *app) options(flags *collector.Flags, plan *config.Plan) (collector.Options, reader.Options, error) {
	o, ro, err := flags.Options()
	if err != nil {
		return o, ro, err
	}
	o.NodeName = config.SelfName(*a.nodeName)
	o.Plan = plan
	return o, ro, nil
}

// newJSONEncoder is how every command prints JSON: indented, and with <, >
// and & as themselves (fix texts quote shell redirections and <interface>
// placeholders; nobody embeds this JSON in HTML).
func newJSONEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	a := newApp()
	serve := newServeCommand(a)
	probe := newProbeCommand(a)
	doctor := newDoctorCommand(a)
	plan := newPlanCommand(a)

	cmd, err := a.kp.Parse(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	if err := a.checkLang(); err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: --lang: %v\n", err)
		return 2
	}
	a.logger = promslog.New(a.logConfig)
	switch cmd {
	case doctor.cmd.FullCommand():
		a.quietLogs()
		return doctor.run()
	case plan.initCmd.FullCommand():
		a.quietLogs()
		return plan.run()
	case probe.runCmd.FullCommand():
		return probe.runNow()
	case probe.parseCmd.FullCommand():
		return probe.parse()
	case probe.judgeCmd.FullCommand():
		return probe.judge(os.Stdout)
	default:
		return serve.run()
	}
}

// usageTemplate is kingpin's default with a command's own flags first and
// the flags every command shares after them, under their own heading:
// `doctor --help` must not open with the web server's flags.
const usageTemplate = `{{define "FormatCommand" -}}
{{if .FlagSummary}} {{.FlagSummary}}{{end -}}
{{range .Args}}{{if not .Hidden}} {{if not .Required}}[{{end}}{{if .PlaceHolder}}{{.PlaceHolder}}{{else}}<{{.Name}}>{{end}}{{if .Value|IsCumulative}}...{{end}}{{if not .Required}}]{{end}}{{end}}{{end -}}
{{end -}}

{{define "FormatCommands" -}}
{{range .FlattenedCommands -}}
{{if not .Hidden -}}
  {{.FullCommand}}{{if .Default}}*{{end}}{{template "FormatCommand" .}}
{{.Help|Wrap 4}}
{{end -}}
{{end -}}
{{end -}}

{{define "FormatUsage" -}}
{{template "FormatCommand" .}}{{if .Commands}} <command> [<args> ...]{{end}}
{{if .Help}}
{{.Help|Wrap 0 -}}
{{end -}}

{{end -}}

{{if .Context.SelectedCommand -}}
usage: {{.App.Name}} {{.Context.SelectedCommand}}{{template "FormatUsage" .Context.SelectedCommand}}
{{if .Context.SelectedCommand.Flags -}}
Flags of {{.Context.SelectedCommand.FullCommand}}:
{{.Context.SelectedCommand.Flags|FlagsToTwoColumns|FormatTwoColumns}}
{{end -}}
{{if .Context.Args -}}
Args:
{{.Context.Args|ArgsToTwoColumns|FormatTwoColumns}}
{{end -}}
Flags of every command:
{{.App.Flags|FlagsToTwoColumns|FormatTwoColumns}}
{{if len .Context.SelectedCommand.Commands -}}
Subcommands:
{{template "FormatCommands" .Context.SelectedCommand}}
{{end -}}
{{ else -}}
usage: {{.App.Name}}{{template "FormatUsage" .App}}
Without a command, serve runs: its flags (web, collectors) are in "roce_exporter serve --help".

Flags of every command:
{{.App.Flags|FlagsToTwoColumns|FormatTwoColumns}}
Commands:
{{template "FormatCommands" .App}}
{{end -}}
`
