#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
Checks udev/70-libion.rules:

 1. it parses: `udevadm verify` where udev has it (systemd 253 and later),
    and always a syntax check of this script's own (udev(7)'s grammar:
    KEY[{attr}] OP "value" pairs separated by commas, the operators each
    key takes, octal modes, groups that exist here);
 2. it says what the library's permission hint (src/sysfs.c) says it
    does: the same file name, and, for each kind of node the hint names,
    a rule giving it to the same group with the same mode;
 3. meson installs it where udev reads packages' rules: -Dudevrulesdir
    if given, else udev.pc's udevdir/rules.d under the prefix /usr, else
    inside the prefix: PREFIX/lib/udev/rules.d.

Usage: check-udev.py RULES SYSFS_C BUILD_DIR UDEVRULESDIR_OPTION
"""
import grp
import json
import os
import re
import shutil
import subprocess
import sys

MATCH_ONLY = {"ACTION", "DEVPATH", "KERNEL", "KERNELS", "SUBSYSTEM",
              "SUBSYSTEMS", "DRIVER", "DRIVERS", "ATTRS", "TAGS", "CONST",
              "TEST", "PROGRAM", "RESULT"}
ASSIGN_ONLY = {"OWNER", "GROUP", "MODE", "SECLABEL", "RUN", "LABEL", "GOTO",
               "IMPORT", "OPTIONS"}
BOTH = {"NAME", "SYMLINK", "ATTR", "SYSCTL", "ENV", "TAG"}
NEEDS_ATTR = {"ATTR", "ATTRS", "SYSCTL", "ENV", "CONST", "IMPORT", "SECLABEL"}
PAIR = re.compile(r'\s*([A-Z_]+)(?:\{([^}]*)\})?\s*(==|!=|\+=|-=|:=|=)\s*([er]?)"((?:[^"\\]|\\.)*)"\s*')

problems = []


def problem(where, text):
    problems.append(f"{where}: {text}")


def rules_of(path):
    """[(line number, [(key, attr, op, value)])] of the file's rules."""
    rules = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        start, text = i + 1, lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + lines[i]
        i += 1
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        pairs, pos = [], 0
        while pos < len(text):
            m = PAIR.match(text, pos)
            if not m:
                problem(f"{path}:{start}", f"cannot parse from column {pos + 1}: {text[pos:]!r}")
                break
            pairs.append(m.groups())
            pos = m.end()
            if pos < len(text):
                if text[pos] != ",":
                    problem(f"{path}:{start}", f"',' expected at column {pos + 1}")
                    break
                pos += 1
        rules.append((start, pairs))
    return rules


def check_syntax(path, rules):
    for line, pairs in rules:
        where = f"{path}:{line}"
        assigns = 0
        for key, attr, op, _prefix, value in pairs:
            if key not in MATCH_ONLY | ASSIGN_ONLY | BOTH:
                problem(where, f"unknown key {key}")
                continue
            matching = op in ("==", "!=")
            if matching and key in ASSIGN_ONLY:
                problem(where, f"{key} takes an assignment, not {op}")
            if not matching and key in MATCH_ONLY:
                problem(where, f"{key} is a match key: {op} does not apply")
            if key in NEEDS_ATTR and not attr:
                problem(where, f"{key} needs {{attribute}}")
            if not matching:
                assigns += 1
            if key == "MODE" and not matching and not re.fullmatch(r"0?[0-7]{3}", value):
                problem(where, f"MODE {value!r} is not an octal mode")
            if key == "GROUP" and not matching:
                if not re.fullmatch(r"[a-z_][a-z0-9_-]*", value):
                    problem(where, f"GROUP {value!r} is no group name")
                else:
                    try:
                        grp.getgrnam(value)
                    except KeyError:
                        problem(where, f"group {value!r} does not exist on this machine")
        if not pairs:
            continue
        if assigns == 0:
            problem(where, "a rule without any assignment does nothing")
        if all(op not in ("==", "!=") for _k, _a, op, _p, _v in pairs):
            problem(where, "a rule without a match applies to every device")


def check_hint(path, rules, sysfs_c):
    """The hint in src/sysfs.c names this file, a group, a mode and kinds of
    nodes; the rules must do just that for each kind."""
    with open(sysfs_c, encoding="utf-8") as f:
        src = f.read()
    name = re.search(r"udev rule \((\d\d-[A-Za-z0-9_.-]+\.rules)\)", src)
    given = re.search(r"to group (\w+) \((0[0-7]{3})\)", src)
    if not name or not given:
        problem(sysfs_c, "no hint naming a rules file, a group and a mode found")
        return
    if name.group(1) != os.path.basename(path):
        problem(sysfs_c, f"the hint names {name.group(1)}, the file is {os.path.basename(path)}")
    group, mode = given.groups()
    # The kinds the hint names, and the match that makes a rule theirs.
    kinds = {
        '"DMA-BUF heaps"': ("SUBSYSTEM", "dma_heap"),
        '"DRM nodes"': ("KERNEL", "card[0-9]*"),
        '"/dev/udmabuf"': ("KERNEL", "udmabuf"),
        '"/dev/ion"': ("KERNEL", "ion"),
    }
    for kind, (key, value) in kinds.items():
        if kind not in src:
            continue
        found = False
        for _line, pairs in rules:
            matches = {(k, v) for k, _a, op, _p, v in pairs if op == "=="}
            sets = {k: v for k, _a, op, _p, v in pairs if op in ("=", ":=")}
            if (key, value) in matches and sets.get("GROUP") == group and sets.get("MODE") == mode:
                found = True
        if not found:
            problem(path, f"the library's hint says it gives {kind} to group {group} "
                          f"({mode}), but no rule does ({key}==\"{value}\")")
        else:
            print(f"ok: {kind[1:-1]}: group {group}, mode {mode}, as the hint says")


def check_install(path, build, option):
    info = json.loads(subprocess.run(["meson", "introspect", "--buildoptions", build],
                                     capture_output=True, text=True, check=True).stdout)
    prefix = next(o["value"] for o in info if o["name"] == "prefix")
    if option:
        want = os.path.join(prefix, option)
    else:
        udevdir = None
        if shutil.which("pkg-config"):
            r = subprocess.run(["pkg-config", "--variable=udevdir", "udev"],
                               capture_output=True, text=True)
            udevdir = r.stdout.strip() if r.returncode == 0 else None
        if udevdir and prefix == "/usr":
            want = os.path.join(udevdir, "rules.d")
        else:
            want = os.path.join(prefix, "lib", "udev", "rules.d")
    installed = json.loads(subprocess.run(["meson", "introspect", "--installed", build],
                                          capture_output=True, text=True, check=True).stdout)
    dest = [d for s, d in installed.items() if os.path.basename(s) == os.path.basename(path)]
    if not dest:
        print("not installed in this build (-Dudev_rules=disabled, or a subproject)")
        return
    if os.path.dirname(dest[0]) != want:
        problem(path, f"installed to {dest[0]}, not into {want}")
    else:
        print(f"ok: installed to {dest[0]}")


def main():
    rules_path, sysfs_c, build, option = sys.argv[1:5]
    udevadm = shutil.which("udevadm")
    if udevadm and subprocess.run([udevadm, "verify", "--help"],
                                  capture_output=True).returncode == 0:
        r = subprocess.run([udevadm, "verify", "--resolve-names=never", rules_path],
                           capture_output=True, text=True)
        sys.stdout.write(r.stdout + r.stderr)
        if r.returncode != 0:
            problem(rules_path, "udevadm verify failed")
        else:
            print("ok: udevadm verify")
    else:
        print("udevadm verify not available here (systemd < 253): own syntax check only")
    rules = rules_of(rules_path)
    check_syntax(rules_path, rules)
    print(f"ok: {len(rules)} rules parsed" if not problems else "syntax problems found")
    check_hint(rules_path, rules, sysfs_c)
    check_install(rules_path, build, option)
    for p in problems:
        print("check-udev:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
