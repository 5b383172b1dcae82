"""How two records' reviewer digests are compared: like with like.

A run, a baseline and the view's index record a SHA-256 per reviewer file, and since a later
version one per section of rubricgate.yaml that runs or grades the reviewer, keyed CONFIG_KEY +
section (runner/digests.py). A record written before the sections were recorded holds the files
alone: against a newer record's files and sections every reviewer read as changed, so the first
run after an upgrade was marked "the reviewer files changed" on the trend and the first baseline
update replaced the pooled counts. Compared here, with the sections left out when either side
recorded none, it is a change only when the files really changed.
"""


from collections.abc import Mapping

CONFIG_KEY = "rubricgate.yaml#"


def sections_unrecorded(digests: Mapping[str, str]) -> bool:
    """A record of files with no rubricgate.yaml section: written before sections were recorded."""
    return bool(digests) and not any(k.startswith(CONFIG_KEY) for k in digests)


def files_only(digests: Mapping[str, str]) -> dict[str, str]:
    """The reviewer files' digests, rubricgate.yaml's sections left out."""
    return {k: v for k, v in digests.items() if not k.startswith(CONFIG_KEY)}


def comparable(digests: Mapping[str, str], other: Mapping[str, str]) -> dict[str, str]:
    """`digests` as the record `other` would have held them: files only when `other` recorded no section."""
    return files_only(digests) if sections_unrecorded(other) else dict(digests)


def reviewer_changed(before: tuple[str, Mapping[str, str]], now: tuple[str, Mapping[str, str]]) -> bool:
    """Whether the reviewer changed between two records, each (fingerprint, digests): never when
    either fingerprint is unknown; by the digests compared like with like when both hold them,
    else by the fingerprints."""
    (fp_before, old), (fp_now, new) = before, now
    if not fp_before or not fp_now or fp_before == fp_now:
        return False
    if not old or not new:
        return True
    return comparable(old, new) != comparable(new, old)
