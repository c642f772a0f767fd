# -*- coding: utf-8 -*-
# Copyright: lowlat developers
# SPDX-License-Identifier: MIT OR Apache-2.0
"""What the lowlat modules share: the options that locate the binary and its --root, and
running one lowlat command whose --json document is read back."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

# The options every lowlat module takes (documented in each module's DOCUMENTATION).
COMMON_ARGS = dict(
    binary=dict(type="path", default="/usr/local/bin/lowlat"),
    root=dict(type="path"),
)


def command(module, *args):
    """The argument vector: the binary, --root when the module was given one, then args."""
    argv = [module.params["binary"]]
    if module.params["root"]:
        argv += ["--root", module.params["root"]]
    return argv + list(args)


def run_document(module, argv, kind):
    """Runs argv; returns (exit code, the JSON document of `kind` it printed).

    Exit code 2 (lowlat could not do what was asked, or stopped halfway) fails the task with
    lowlat's own message (the document's `stopped`, else standard error). Output that is not a
    `kind` document fails it too. Exit codes 0 and 1 (some changes were refused by the
    machine) come back to the module to report.
    """
    rc, out, err = module.run_command(argv)
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    if rc not in (0, 1):
        stopped = doc.get("stopped") if isinstance(doc, dict) else None
        module.fail_json(msg=stopped or err.strip() or "lowlat exited with %d" % rc, rc=rc,
                         cmd=argv, stdout=out, stderr=err, document=doc)
    if not isinstance(doc, dict) or doc.get("kind") != kind:
        module.fail_json(msg="%s printed no %r JSON document; is it lowlat 0.1 or later?"
                         % (argv[0], kind), rc=rc, cmd=argv, stdout=out, stderr=err)
    return rc, doc
