// Package cli is usersync's command line: one configuration pass (environment
// first, flags override) and one file per command. Main is the whole program,
// so tests run it in-process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/sync/jsonapi"
)

// Exit codes of usersync.
const (
	ExitOK      = 0 // the command did what it was asked
	ExitFailure = 1 // the command failed; the error says why
	ExitUsage   = 2 // a setting, flag or argument is invalid
)

// usageError marks errors that are the caller's to fix (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// env is what a running command gets: its configuration, its output streams
// and a logger. Commands write results to stdout and logs to stderr.
type env struct {
	cfg    config.Config
	stdin  io.Reader // nil when the caller gave none
	stdout io.Writer
	stderr io.Writer
	logger *slog.Logger
	getenv func(string) string // the process environment, for what is not a setting (DISPLAY)
	// account is the --account the command was given ("" for none);
	// fleet, in a registered account's env, is the default account's
	// Config (accounts.go).
	account string
	fleet   *config.Config
	// logins, in a worker, are the accounts whose OAuth login it waits
	// for: an account without a stored refresh token waits rather than
	// stops the worker (auth_wait.go). nil in every other command.
	logins *loginWaits
	// bodies, in a worker, is the one budget of the API response bodies
	// read at once (USERSYNC_MAX_RESPONSE_MEMORY) that every account's
	// client shares; nil elsewhere: a command's one client has its own.
	bodies *jsonapi.BodyBudget
}

// command is one subcommand. setup registers the command's own flags on fs
// and returns the function that runs it once flags are parsed.
type command struct {
	name    string
	summary string
	args    string // argument synopsis after the flags, if any
	details string // a paragraph for `usersync <command> -h`
	setup   func(fs *flag.FlagSet) func(ctx context.Context, e *env, args []string) error
}

func commands() []command {
	return []command{
		migrateCommand(),
		accountScoped(syncCommand()),
		accountScoped(statusCommand()),
		simulateCommand(),
		workerCommand(),
		accountScoped(backfillCommand()),
		accountScoped(reconcileCommand()),
		accountScoped(snapshotCommand()),
		accountScoped(schemaCommand()),
		healthcheckCommand(),
		versionCommand(),
		accountScoped(authLoginCommand()),
		accountScoped(authStatusCommand()),
		accountScoped(forgetCommand()),
		accountScoped(piiApplyCommand()),
		accountScoped(checkCommand()),
		accountScoped(jobsListCommand()),
		jobsCancelCommand(),
		jobsRetryCommand(),
		accountsAddCommand(),
		accountsListCommand(),
		accountsShowCommand(),
		accountsSetCommand(),
		accountsPauseCommand(),
		accountsResumeCommand(),
		accountsRemoveCommand(),
		accountsViewsCommand(),
		accountsRekeyCommand(),
	}
}

// Main runs usersync with the given arguments (without the program name) in
// the given environment (os.Environ's KEY=value form) and returns the process
// exit code.
func Main(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	return MainWithInput(ctx, args, environ, nil, stdout, stderr)
}

// MainWithInput is Main with standard input, which usersync auth login
// --no-browser reads the pasted code from.
func MainWithInput(ctx context.Context, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	args = joinSubcommand(args)
	if len(args) == 2 && args[0] == "help" && args[1] == "settings" {
		config.WriteHelp(stdout)
		return ExitOK
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			return MainWithInput(ctx, append(append([]string(nil), args[1:]...), "-h"), environ, stdin, stdout, stderr)
		}
		printHelp(stdout)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	cmd, code := findCommand(args, stdout, stderr)
	if cmd == nil {
		return code
	}
	fs := flag.NewFlagSet("usersync "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := cmd.setup(fs)
	flagVals := registerSettingFlags(fs)
	if err := fs.Parse(nameFirst(cmd.name, args[1:])); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandHelp(stdout, *cmd, fs)
			return ExitOK
		}
		fmt.Fprintf(stderr, "usersync %s: %v (run usersync %s -h)\n", cmd.name, err, cmd.name)
		return ExitUsage
	}
	given := givenSettings(fs, flagVals)
	if cmd.name == "accounts add" || cmd.name == "accounts set" {
		given = config.FleetFlags(given) // their account-scoped flags are the account's
	}
	cfg, err := config.Load(config.Environ(environ), given)
	if err != nil {
		fmt.Fprintf(stderr, "usersync %s: %v\n", cmd.name, err)
		return ExitUsage
	}
	e := &env{cfg: cfg, stdin: stdin, stdout: stdout, stderr: stderr, logger: newLogger(stderr, cfg, cmd.name == "worker"),
		getenv: getenvIn(environ)}
	if err := config.CheckVariables(environ, cfg.StrictConfig, e.logger); err != nil {
		fmt.Fprintf(stderr, "usersync %s: %v\n", cmd.name, err)
		return ExitUsage
	}
	if err := run(ctx, e, fs.Args()); err != nil {
		if !strings.HasPrefix(cmd.name, "auth ") { // auth login is the remedy
			err = withAuthRemedy(cfg, err)
		}
		fmt.Fprintf(stderr, "usersync %s: %s\n", cmd.name, oneLine(err.Error()))
		return exitCode(err)
	}
	return ExitOK
}

// findCommand returns the command args name, or nil and the exit code after
// saying why there is none (or listing the auth subcommands, for auth -h).
func findCommand(args []string, stdout, stderr io.Writer) (*command, int) {
	for _, c := range commands() {
		if c.name == args[0] {
			return &c, ExitOK
		}
	}
	what, group := commandGroups()[args[0]]
	if !group {
		fmt.Fprintf(stderr, "usersync: unknown command %q (run usersync help)\n", args[0])
		return nil, ExitUsage
	}
	var subs []string
	for _, c := range commands() {
		if strings.HasPrefix(c.name, args[0]+" ") {
			subs = append(subs, "usersync "+c.name)
		}
	}
	if len(args) > 1 && (args[1] == "-h" || args[1] == "--help") {
		fmt.Fprintf(stdout, "usersync %s: %s (run usersync help %s)\n", args[0], what, strings.TrimPrefix(subs[0], "usersync "))
		for _, c := range commands() {
			if strings.HasPrefix(c.name, args[0]+" ") {
				fmt.Fprintf(stdout, "  usersync %-11s %s\n", c.name, c.summary)
			}
		}
		return nil, ExitOK
	}
	either := subs[len(subs)-1]
	if len(subs) > 1 {
		either = strings.Join(subs[:len(subs)-1], ", ") + " or " + either
	}
	fmt.Fprintf(stderr, "usersync %s: give a subcommand: %s (run usersync help %s)\n", args[0],
		either, strings.TrimPrefix(subs[0], "usersync "))
	return nil, ExitUsage
}

// commandGroups are the commands that take a subcommand, and what they do.
func commandGroups() map[string]string {
	return map[string]string{
		"accounts": "register, list, pause and remove the fleet's accounts",
		"auth":     "authorize usersync with the API's OAuth",
		"jobs":     "list, cancel and retry the job queue's jobs",
		"pii":      "apply the personal-data policy",
	}
}

// exitCode is the exit status of a command that failed with err.
func exitCode(err error) int {
	var ue usageError
	var ie registry.InputError
	if errors.As(err, &ue) || errors.As(err, &ie) {
		return ExitUsage
	}
	var qe quarantinedError
	if errors.As(err, &qe) {
		return ExitQuarantined
	}
	return ExitFailure
}

// joinSubcommand turns "auth login ..." into the command "auth login" (and
// "pii apply ..." into "pii apply", "jobs list ..." into "jobs list").
func joinSubcommand(args []string) []string {
	if len(args) > 1 && commandGroups()[args[0]] != "" && !strings.HasPrefix(args[1], "-") {
		return append([]string{args[0] + " " + args[1]}, args[2:]...)
	}
	return args
}

func newLogger(w io.Writer, cfg config.Config, json bool) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated by config.Load
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" || (cfg.LogFormat == "auto" && json) {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// oneLine keeps an error on one line, so a wrapped multi-line message (a
// driver's detail, a server's body) never spills over the terminal.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, `usersync mirrors a sales-engagement platform's users, teams, roles and profiles
into PostgreSQL tables and Parquet snapshots.

Usage:
  usersync <command> [flags]

Commands:
`)
	cmds := commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'usersync <command> -h' for a command's own flags, and 'usersync help settings'
for the settings every command reads (USERSYNC_* variables, or flags of the same name).
`)
	fmt.Fprintf(w, "\nExit codes: %d success, %d failure, %d invalid setting or usage.\n", ExitOK, ExitFailure, ExitUsage)
}

// isSetting says whether a flag is a setting's (every command has those).
func isSetting(flagName string) bool {
	for _, s := range config.Settings() {
		if s.Flag == flagName {
			return true
		}
	}
	return false
}

func printCommandHelp(w io.Writer, c command, fs *flag.FlagSet) {
	var own []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !isSetting(f.Name) {
			own = append(own, f)
		}
	})
	usage := strings.TrimSpace(strings.Join([]string{"usersync", c.name, map[bool]string{true: "[flags]"}[len(own) > 0], c.args}, " "))
	fmt.Fprintf(w, "usersync %s: %s\n\nUsage:\n  %s\n", c.name, c.summary, strings.Join(strings.Fields(usage), " "))
	if c.details != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.details))
	}
	if len(own) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		for _, f := range own {
			def := ""
			if f.DefValue != "" && f.DefValue != "false" {
				def = " [default " + f.DefValue + "]"
			}
			fmt.Fprintf(w, "  --%s%s\n      %s\n", f.Name, def, f.Usage)
		}
	}
	fmt.Fprintln(w, "\nSettings (USERSYNC_SCHEMA, DATABASE_URL, ...) come from the environment or flags of the same")
	fmt.Fprintln(w, "name: run 'usersync help settings' for the list, or see docs/configuration.md.")
}
