package configs

import (
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// commandFlags are the flags of `pool run` that are not settings.
type commandFlags struct {
	configFile   stringValue
	dryRun, once switchValue
}

// runFlags makes the flag set of `pool run`, bound to v. It prints nothing:
// RunUsage says what the flags are.
func runFlags(v *viper.Viper) (*pflag.FlagSet, *commandFlags, error) {
	fs := pflag.NewFlagSet("pool", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	flags := &commandFlags{configFile: stringValue(os.Getenv("POOL_CONFIG")), dryRun: "false", once: "false"}
	fs.Var(&flags.configFile, "config", "config `file` (default ./pool.yaml if present)")
	addSwitch(fs, &flags.dryRun, "dry-run", "decide and log, but post nothing and start no session")
	addSwitch(fs, &flags.once, "once", "run one cycle, wait for its sessions, and exit")
	if err := bind(v, fs, settings); err != nil {
		return nil, nil, err
	}
	return fs, flags, nil
}

// RunUsage is the help of `pool run`'s flags, one a line.
func RunUsage() string {
	fs, _, err := runFlags(viper.New())
	if err != nil {
		return err.Error()
	}
	return fs.FlagUsages()
}

// A switchValue is a setting that is on or off: the flag alone turns it on,
// and its help names no type.
type switchValue string

func (s *switchValue) String() string { return string(*s) }
func (s *switchValue) Type() string   { return "bool" }
func (s *switchValue) on() bool       { b, _ := strconv.ParseBool(string(*s)); return b }

func (s *switchValue) Set(v string) error {
	if _, err := strconv.ParseBool(v); err != nil {
		return errors.New("want true or false")
	}
	*s = switchValue(v)
	return nil
}

func addSwitch(fs *pflag.FlagSet, s *switchValue, name, usage string) {
	fs.Var(s, name, usage)
	fs.Lookup(name).NoOptDefVal = "true"
}

type stringValue string

func (s *stringValue) String() string     { return string(*s) }
func (s *stringValue) Type() string       { return "string" }
func (s *stringValue) Set(v string) error { *s = stringValue(v); return nil }

// ForgeFlags adds to fs, for the read-only commands (pool report, pool
// tick), --config and the flags of the settings they name (forgeKeys): how
// to reach the forge, the pool's own commit status context, and the
// settings of its policy an operator may want to give by hand. After fs is
// parsed, the returned function resolves every setting as Load does for
// the supervisor, from the defaults, the config file (--config,
// POOL_CONFIG, or ./pool.yaml when present), the POOL_* environment
// variables and those flags, and validates what the commands use: given
// the pool's file, they judge by the policy the supervisor decides by
// (Config.Policy).
func ForgeFlags(fs *pflag.FlagSet) func() (Config, error) {
	v := viper.New()
	file := stringValue(os.Getenv("POOL_CONFIG"))
	fs.Var(&file, "config", "the pool's config `file` (default ./pool.yaml if present)")
	list := make([]setting, 0, len(settings))
	for _, s := range settings {
		if !slices.Contains(forgeKeys, s.key) {
			s.flag = "" // its environment variable, file and default only
		}
		list = append(list, s)
	}
	bindErr := bind(v, fs, list)
	return func() (Config, error) {
		if bindErr != nil {
			return Config{}, bindErr
		}
		name, err := readFile(v, string(file))
		if err != nil {
			return Config{}, err
		}
		cfg, err := decode(v)
		if err != nil {
			return Config{}, err
		}
		cfg.File = name
		return cfg, cfg.validateForge()
	}
}

// repeatable are the settings whose flag may be given more than once.
var repeatable = map[string]bool{"repo": true}

func bind(v *viper.Viper, fs *pflag.FlagSet, list []setting) error {
	for _, s := range list {
		v.SetDefault(s.key, s.def)
		if err := v.BindEnv(append([]string{s.key}, s.env...)...); err != nil {
			return &Error{Key: s.key, Reason: err.Error()}
		}
		if s.flag == "" {
			continue
		}
		switch {
		case repeatable[s.key]:
			fs.StringArray(s.flag, nil, s.usage)
		case s.def == "false": // a switch: --auto-merge alone means true
			sw := switchValue(s.def)
			addSwitch(fs, &sw, s.flag, strings.ReplaceAll(s.usage, "`bool`", "bool"))
		default:
			fs.String(s.flag, s.def, s.usage)
		}
		if err := v.BindPFlag(s.key, fs.Lookup(s.flag)); err != nil {
			return &Error{Key: s.key, Reason: err.Error()}
		}
	}
	return nil
}
