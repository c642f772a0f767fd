"""The lowlat commands that bench/scale.sh and bench/read-floor.sh time on a machine tree, and
the COMMANDS selection both scripts take (names as printed, comma-separated)."""
import sys


def commands(plan_dir):
    """Each command's name as printed, with its arguments; plan writes into plan_dir."""
    return {
        "inventory": ["inventory"],
        "inventory --json": ["inventory", "--json"],
        "audit --json": ["audit", "--json"],
        "plan --out": ["plan", "--out", plan_dir, "--force"],
    }


def chosen(only, script):
    """The names of the commands COMMANDS (`only`) names, in their order, or all of them when
    it is empty; exit 2 naming `script` when it names one that is not a command."""
    names = list(commands(""))
    if not only:
        return names
    wanted = [name.strip() for name in only.split(",")]
    unknown = [name for name in wanted if name not in names]
    if unknown:
        print("%s: COMMANDS names %s, not a command here; the commands are: %s" % (
            script, ", ".join(repr(u) for u in unknown), ", ".join(names)), file=sys.stderr)
        sys.exit(2)
    return wanted
