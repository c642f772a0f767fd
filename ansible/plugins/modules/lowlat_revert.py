#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lowlat developers
# SPDX-License-Identifier: MIT OR Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: lowlat_revert
short_description: Put back every value lowlat apply changed (lowlat revert)
version_added: "1.1.0"
description:
  - Runs C(lowlat revert --json) on the host, which replays the journal that
    M(lowlat.lowlat.lowlat_apply) wrote, latest first, then removes it.
  - In check mode it runs C(lowlat revert --dry-run), which lists what would be put back.
  - With C(--diff) every journal record put back (or that would be) is listed.
options:
  binary:
    description: The lowlat binary on the host.
    type: path
    default: /usr/local/bin/lowlat
  root:
    description:
      - The directory tree lowlat changes instead of the live machine (its C(--root)). Unset
        for the live machine.
    type: path
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
notes:
  - C(changed) is true only when some record was put back (or in check mode would be); with
    no journal (nothing applied, or already reverted) it is false.
  - The task fails when the machine refused to restore a record (lowlat's exit code 1).
author:
  - lowlat developers
"""

EXAMPLES = r"""
- name: Put back what lowlat apply changed
  lowlat.lowlat.lowlat_revert:
"""

RETURN = r"""
changes:
  description: How many journal records were put back, or in check mode would be.
  returned: always
  type: int
  sample: 23
records:
  description:
    - Every journal record, latest first, with C(line), C(what) it restores and C(action)
      (restored, unchanged, would-restore, other-boot, failed; C(error) for a failed one).
  returned: always
  type: list
  elements: dict
  sample:
    - line: 4
      what: /proc/sys/vm/stat_interval = 1
      action: restored
      error: null
document:
  description: The whole JSON document lowlat printed (kind C(revert)).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.lowlat.lowlat.plugins.module_utils.lowlat import (
    COMMON_ARGS,
    command,
    run_document,
)


def main():
    module = AnsibleModule(argument_spec=dict(**COMMON_ARGS), supports_check_mode=True)
    argv = command(module, "revert", "--json")
    if module.check_mode:
        argv.append("--dry-run")
    rc, doc = run_document(module, argv, "revert")
    moving = [r for r in doc["records"] if r["action"] in ("restored", "would-restore")]
    result = dict(
        changed=doc["changed"] > 0,
        changes=doc["changed"],
        records=doc["records"],
        document=doc,
        rc=rc,
    )
    if module._diff and moving:
        result["diff"] = dict(
            prepared="".join("restore (journal line %d): %s\n" % (r["line"], r["what"])
                             for r in moving)
        )
    if rc != 0:
        failed = [
            "journal line %d: %s: %s" % (r["line"], r["what"], r["error"])
            for r in doc["records"]
            if r["action"] == "failed"
        ]
        module.fail_json(msg="lowlat revert: the machine refused some records (run it again "
                         "once the cause is fixed): " + "; ".join(failed), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
