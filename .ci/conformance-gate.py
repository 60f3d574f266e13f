#!/usr/bin/env python3
"""The CI gate on the conformance checker's results (../shared/conformance/check.py --out DIR).

Exit 0 when no case differs, 1 otherwise, with one exception the checker cannot express: a
difference that exists only because a recorded uid sits inside a FieldsV1 key. The checker
replaces uids with placeholders in values, not in object keys, so an ownerReference's
`k:{"uid":"..."}` entry always reads as "absent on one side" twice (the recorded uid, the
model's uid), whatever the model does. Such a pair is cancelled when both differences are at the
same step and aspect, their paths are equal once uids are masked, and the value one side has
under its uid is the value the other side has under its own. Every other difference, including
a FieldsV1 key whose contents differ, fails the gate.

Usage: conformance-gate.py DIR/results.json
"""
import json
import re
import sys

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ABSENT = "<absent>"
# check.py's aspects of severity 1 (cosmetic); any other aspect, known or new, differs.
COSMETIC = ("details", "message", "order", "cosmetic")


def uid_in_key_pairs(diffs):
    """The differences left after cancelling the uid-in-FieldsV1-key pairs."""
    left = list(diffs)
    cancelled = True
    while cancelled:
        cancelled = False
        for i, a in enumerate(left):
            if a.get("aspect") != "managedFields" or not UUID.search(a.get("detail", "")):
                continue
            for j, b in enumerate(left):
                if j == i or b.get("aspect") != "managedFields":
                    continue
                same_place = a.get("step") == b.get("step") and UUID.sub("<uid>", a["detail"]) == UUID.sub(
                    "<uid>", b.get("detail", "")
                )
                crossed = (
                    a.get("model") == ABSENT
                    and b.get("real") == ABSENT
                    and a.get("real") == b.get("model")
                    and a.get("detail") != b.get("detail")
                )
                if same_place and crossed:
                    left = [d for k, d in enumerate(left) if k not in (i, j)]
                    cancelled = True
                    break
            if cancelled:
                break
    return left


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        results = json.load(f)["results"]
    failing = []
    for case in results:
        if case.get("status") != "differing":
            continue
        # As check.py classifies: excluded differences and cosmetic aspects do not count.
        counted = [d for d in case.get("diffs") or [] if "excluded" not in d]
        left = uid_in_key_pairs(counted)
        blocking = [d for d in left if d.get("aspect") not in COSMETIC]
        if blocking:
            failing.append((case["case"], blocking))
        else:
            print(f"conformance gate: {case['case']} differs only by uids inside FieldsV1 keys, "
                  "which the checker does not normalize")
    for name, diffs in failing:
        print(f"conformance gate: {name} differs: {diffs[0].get('aspect')} {diffs[0].get('detail', '')}")
    print(f"conformance gate: {len(failing)} differing case(s) beyond the checker's uid-in-key limit")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
