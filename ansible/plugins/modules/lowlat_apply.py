#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lowlat developers
# SPDX-License-Identifier: MIT OR Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: lowlat_apply
short_description: Make a host match a lowlat plan (lowlat apply)
version_added: "1.1.0"
description:
  - Runs C(lowlat apply --plan PLAN --yes --json) on the host and reports what it did, setting
    by setting, from lowlat's JSON document (kind C(apply)).
  - Every prior value is journaled on the host first, so M(lowlat.lowlat.lowlat_revert) puts
    them all back.
  - In check mode it runs C(lowlat apply --dry-run), which changes nothing.
  - With C(--diff) every value that changed (or would change) is shown as a before/after diff,
    one per file, knob, thread or service.
options:
  plan:
    description: The plan file on the host (C(plan.json) written by C(lowlat plan --out DIR)).
    type: path
    required: true
  scope:
    description:
      - C(runtime) is what takes effect now (sysctls, IRQs, kernel threads, cpufreq, services
        stopped); C(boot) is what persists (kernel arguments, installed files, services
        enabled); C(all) is both.
    type: str
    choices: [all, runtime, boot]
    default: all
  force:
    description: Apply a plan made for another machine (other host name or CPUs).
    type: bool
    default: false
  binary:
    description: The lowlat binary on the host.
    type: path
    default: /usr/local/bin/lowlat
  root:
    description:
      - The directory tree lowlat reads and changes instead of the live machine (its
        C(--root)), such as a copy of a fixture machine in tests. Unset for the live machine.
    type: path
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
notes:
  - C(changed) is true only when lowlat changed (or in check mode would change) at least one
    value, so a second run reports C(changed=false).
  - The task fails when the machine refused a change (lowlat's exit code 1), with every
    refusal in C(msg); what was changed stays changed and journaled.
author:
  - lowlat developers
"""

EXAMPLES = r"""
- name: Apply the plan (check mode shows what would change)
  lowlat.lowlat.lowlat_apply:
    plan: /var/tmp/lowlat/plan/plan.json
  register: lowlat_apply
  notify: Reboot for lowlat

- name: Only what takes effect now, on a copy of a machine's tree
  lowlat.lowlat.lowlat_apply:
    plan: /tmp/plan/plan.json
    scope: runtime
    root: /tmp/copy-of-a-machine
"""

RETURN = r"""
reboot_required:
  description:
    - Whether kernel arguments are configured (in check mode, would be) but not in effect
      until the host reboots.
  returned: always
  type: bool
  sample: true
changes:
  description: How many single values (knobs, files, threads, services) changed, or in check mode would change.
  returned: always
  type: int
  sample: 14
settings:
  description:
    - Every setting of the plan in scope, with C(id), C(layer), C(action) (changed, unchanged,
      would-change, failed, unsupported, manual) and its C(changes), each with C(target),
      C(before), C(after) and C(action) (C(error) for a failed one).
  returned: always
  type: list
  elements: dict
  sample:
    - id: sysctl:vm.stat_interval
      layer: sysctl
      settings: 1
      action: changed
      reason: null
      changes:
        - target: /proc/sys/vm/stat_interval
          before: "1"
          after: "10"
          action: changed
follow_ups:
  description: Commands run after the changes, or to run by hand (GRUB regeneration on a tree).
  returned: always
  type: list
  elements: str
document:
  description: The whole JSON document lowlat printed (kind C(apply)).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.lowlat.lowlat.plugins.module_utils.lowlat import (
    COMMON_ARGS,
    command,
    run_document,
)

# The changes lowlat made or, in a dry run, would make.
MOVING = ("changed", "would-change")


def diff_of(doc):
    """Ansible's diff: one before/after per changed value, headed by its target."""
    return [
        dict(
            before_header="%s (%s)" % (change["target"], setting["id"]),
            after_header="%s (%s)" % (change["target"], setting["id"]),
            before=change["before"] + "\n",
            after=change["after"] + "\n",
        )
        for setting in doc["settings"]
        for change in setting["changes"]
        if change["action"] in MOVING
    ]


def refusals(doc):
    """Every change the machine refused, with lowlat's reason."""
    return [
        "%s: %s: %s" % (setting["id"], change["target"], change["error"])
        for setting in doc["settings"]
        for change in setting["changes"]
        if change["action"] == "failed"
    ]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            plan=dict(type="path", required=True),
            scope=dict(type="str", choices=["all", "runtime", "boot"], default="all"),
            force=dict(type="bool", default=False),
            **COMMON_ARGS
        ),
        supports_check_mode=True,
    )
    p = module.params
    argv = command(module, "apply", "--plan", p["plan"], "--" + p["scope"], "--yes", "--json")
    if p["force"]:
        argv.append("--force")
    if module.check_mode:
        argv.append("--dry-run")
    rc, doc = run_document(module, argv, "apply")
    result = dict(
        changed=doc["changed"] > 0,
        changes=doc["changed"],
        reboot_required=doc["reboot_required"],
        settings=doc["settings"],
        follow_ups=doc["follow_ups"],
        document=doc,
        rc=rc,
    )
    if module._diff:
        result["diff"] = diff_of(doc)
    unconfigured = doc.get("boot_not_configured")
    if rc != 0 and unconfigured:
        module.fail_json(
            msg="lowlat apply: the kernel arguments could not be configured (%s); add them "
            "with the bootloader's own tool and reboot: %s"
            % (unconfigured["why"], unconfigured["add"]),
            **result
        )
    if rc != 0:
        module.fail_json(
            msg="lowlat apply: the machine refused some changes (the rest were made and "
            "journaled; lowlat_revert undoes them): " + "; ".join(refusals(doc)),
            **result
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
