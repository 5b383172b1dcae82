"""An in-process agent reads its workspace in layers, with the overlay's rules and never outside it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rubricgate.agents.skill_checks import check_links, parse_skill
from rubricgate.agents.workspace_view import WorkspaceView


def _layers(tmp_path: Path) -> tuple[Path, Path]:
    case, base = tmp_path / "case", tmp_path / "base"
    for folder, files in ((case, {"skills/s/SKILL.md": "top", "docs": "a file over a folder"}),
                          (base, {"skills/s/SKILL.md": "below", "skills/s/references/r.md": "ref",
                                  "docs/guide.md": "hidden", "README.md": "readme"})):
        for rel, text in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
    return case, base


@pytest.mark.parametrize("rel", ["../outside.txt", "skills/../../outside.txt", "/etc/hostname", "..", ""])
def test_nothing_outside_the_workspace_is_read(tmp_path: Path, rel: str) -> None:
    case, base = _layers(tmp_path)
    (tmp_path / "outside.txt").write_text("host file")
    for view in (WorkspaceView(tmp_path / "ws", (case, base)), WorkspaceView(base)):
        assert view.file(rel) is None and view.read_text(rel) is None


def test_a_link_leaving_the_skill_folder_for_the_host_is_a_broken_link(tmp_path: Path) -> None:
    # The old check joined the link to the folder on disk: one climbing out read the host's files.
    case, base = _layers(tmp_path)
    target = "references/" + "../" * 12 + "etc/hostname"
    assert Path("/etc/hostname").is_file()
    view = WorkspaceView(tmp_path / "ws", (case, base))
    skill = parse_skill("skills/s/SKILL.md", f"---\nname: s\n---\nSee [x]({target}).\n", tmp_path / "ws/skills/s",
                        lambda t: view.has_file(f"skills/s/{t}"))
    assert [h.rule for h in check_links(skill)] == ["refs-link-broken"]
    on_disk = parse_skill("skills/s/SKILL.md", skill.lines and "\n".join(skill.lines), base / "skills/s")
    assert [h.rule for h in check_links(on_disk)] == ["refs-link-broken"]


def test_a_file_of_a_higher_layer_hides_the_folder_below_it(tmp_path: Path) -> None:
    view = WorkspaceView(tmp_path / "ws", _layers(tmp_path))
    assert view.read_text("docs") == "a file over a folder"
    assert view.file("docs/guide.md") is None
    assert "docs/guide.md" not in view.glob("**/*")


def test_a_symbolic_link_is_never_followed(tmp_path: Path) -> None:
    case, base = _layers(tmp_path)
    os.symlink("/etc/hostname", case / "skills/s/link.md")
    os.symlink("/etc", case / "skills/s/dir")
    view = WorkspaceView(tmp_path / "ws", (case, base))
    assert view.file("skills/s/link.md") is None and view.file("skills/s/dir/hostname") is None
    assert not any(rel.startswith("skills/s/dir/") or rel.endswith("link.md") for rel in view.glob("skills/**/*"))


def test_the_topmost_layer_answers_and_folders_merge(tmp_path: Path) -> None:
    view = WorkspaceView(tmp_path / "ws", _layers(tmp_path))
    assert view.read_text("skills/s/SKILL.md") == "top"
    assert view.glob("skills/s/**/*") == ["skills/s/SKILL.md", "skills/s/references/r.md"]
    assert view.has_file("README.md") and not view.has_file("skills/s")


def test_without_layers_the_root_folder_is_read(tmp_path: Path) -> None:
    _, base = _layers(tmp_path)
    view = WorkspaceView(base)
    assert view.read_text("docs/guide.md") == "hidden"
    assert view.glob("skills/**/*") == ["skills/s/SKILL.md", "skills/s/references/r.md"]


def test_a_backslash_is_a_character_of_a_name_not_a_separator(tmp_path: Path) -> None:
    # Mapped to '/', a secret in `references/notes\prod.md` was never globbed nor read.
    case, base = _layers(tmp_path)
    (case / "skills/s/references").mkdir()
    (case / "skills/s/references/notes\\prod.md").write_text("token")
    view = WorkspaceView(tmp_path / "ws", (case, base))
    assert view.read_text("skills/s/references/notes\\prod.md") == "token"
    assert "skills/s/references/notes\\prod.md" in view.glob("skills/s/**/*")
    assert view.file("skills\\s\\SKILL.md") is None  # not skills/s/SKILL.md


def test_dot_dot_climbs_only_out_of_a_folder_that_exists(tmp_path: Path) -> None:
    # As the file system resolves it: `references/../SKILL.md` is broken without a references/ folder.
    case, base = _layers(tmp_path)
    view = WorkspaceView(tmp_path / "ws", (case, base))
    assert view.read_text("skills/s/references/../SKILL.md") == "top"
    assert view.file("skills/s/nothing/../SKILL.md") is None
    assert view.file("skills/../README.md") is not None
    assert view.file("docs/../README.md") is None  # docs is a file in the top layer: not a folder to leave


def test_each_folder_is_entered_once_per_view_however_many_files_are_asked_for(tmp_path: Path, monkeypatch) -> None:
    """A review asks for every file of a skill; each asked for every folder above it again
    (a path d folders deep cost d (d + 1) / 2 folder entries, each an lstat per layer)."""
    import rubricgate.agents.workspace_view as wv

    upper, lower = tmp_path / "upper", tmp_path / "lower"
    deep = ("a", "b", "c", "d", "e", "f")
    for layer in (upper, lower):
        layer.joinpath(*deep).mkdir(parents=True)
    for i in range(10):
        (lower.joinpath(*deep) / f"f{i}.md").write_text(str(i))
    calls: list[str] = []
    real_lexists = os.path.lexists
    monkeypatch.setattr(wv.os.path, "lexists", lambda p: calls.append(str(p)) or real_lexists(p))
    view = WorkspaceView(Path("/w"), (upper, lower))
    assert [view.read_text("/".join((*deep, f"f{i}.md"))) for i in range(10)] == [str(i) for i in range(10)]
    # six folders in two layers once, then the ten files (each looked for in both layers)
    assert len(calls) == 6 * 2 + 10 * 2, len(calls)
    assert view.file("a/b/c/../c/d/e/f/f3.md") == lower.joinpath(*deep, "f3.md")  # '..' as before
    assert view.file("a/b/x/../c/d/e/f/f3.md") is None  # out of a folder that does not exist
