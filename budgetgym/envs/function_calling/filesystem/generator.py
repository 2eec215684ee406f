"""Seeded task drafts for the file system: a random tree, then requests drawn from the kinds below,
each played on the draft's backend so later requests see earlier changes. ``requests`` is how many
kinds (two or three by default; eight to ten for a long conversation, ``generate.LONG_REQUESTS``);
each kind makes one or two user turns."""

from __future__ import annotations

import posixpath
import random
import re
from typing import Callable

from budgetgym.envs.function_calling.domain import REQUESTS
from budgetgym.envs.function_calling.drafting import Draft
from budgetgym.envs.function_calling.filesystem.backend import FileSystem, project
from budgetgym.envs.function_calling.filesystem.tools import TOOLS

TOP = ["docs", "photos", "projects", "notes", "music", "work", "personal", "school"]
SUB = ["2023", "2024", "drafts", "old", "clients", "travel", "recipes", "taxes"]
NAMES = ["report", "budget", "letter", "resume", "plan", "ideas", "minutes", "contract", "summary",
         "checklist", "draft", "agenda", "recipe", "itinerary", "readme", "schedule"]
EXTS = [".txt", ".md", ".csv"]
CLIENTS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark", "Wayne", "Tyrell"]
WORDS = ["maple", "harbor", "cobalt", "violet", "falcon", "pepper", "summit", "willow", "ember", "quartz"]
TOPICS = ["launch", "audit", "migration", "hiring", "offsite", "renewal", "redesign", "review"]
EXTRA_LINES = ["Buy more printer paper.", "Call the landlord on Friday.", "Back up the laptop.",
               "Renew the passport.", "Book the dentist.", "Water the plants."]
IMPOSSIBLE = [
    ("Print {f} on my office printer.", "there is no printing tool"),
    ("Email {f} to my accountant.", "I have no email tool, only file tools"),
    ("Compress {d} into a zip archive.", "there is no tool to create archives"),
    ("When was {f} last modified?", "the file tools don't report modification times"),
    ("Share {d} with my team by link.", "there is no sharing tool"),
]


def random_tree(rng: random.Random) -> dict:
    """A home folder tree: a few top folders, some subfolders, text files with distinctive facts."""
    dirs = ["/"]
    for top in sorted(rng.sample(TOP, rng.randint(3, 5))):
        dirs.append(f"/{top}")
        for sub in sorted(rng.sample(SUB, rng.randint(0, 2))):
            dirs.append(f"/{top}/{sub}")
    files: dict[str, str] = {}
    tokens = iter(rng.sample(range(1000, 10000), 64))  # up to 15 folders x 3 files, logs and wifi
    for folder in dirs[1:]:
        for name in rng.sample(NAMES, rng.randint(1, 3)):
            path = posixpath.join(folder, name + rng.choice(EXTS))
            files[path] = _content(rng, next(tokens))
    logs = rng.choice([d for d in dirs if d != "/"])
    for number in range(rng.randint(2, 3)):
        files[f"{logs}/debug-{number + 1}.log"] = f"DEBUG run {next(tokens)} finished\n"
    files[rng.choice(dirs[1:]) + "/wifi.txt"] = f"Network: Home\nWifi password: {rng.choice(WORDS)}{next(tokens)}\n"
    if rng.random() < 0.5:
        # Two files of the same name: a request naming just "todo.txt" is ambiguous.
        for folder in rng.sample(dirs[1:], 2):
            files[folder + "/todo.txt"] = f"TODO: {rng.choice(EXTRA_LINES)}\n"
    return {"cwd": "/", "dirs": sorted(dirs), "files": dict(sorted(files.items()))}


def _content(rng: random.Random, token: int) -> str:
    kind = rng.randrange(3)
    if kind == 0:
        return f"Invoice INV-{token} for {rng.choice(CLIENTS)}\nTotal: {rng.randint(100, 9000)}.{rng.randint(0, 99):02d} EUR\n"
    if kind == 1:
        return f"Project {rng.choice(TOPICS)} (ref P-{token})\nDeadline: 2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}\n"
    return f"Notes N-{token}: {rng.choice(EXTRA_LINES)}\n"


def generate(rng: random.Random, requests: tuple[int, int] = REQUESTS) -> Draft:
    draft = Draft("filesystem", TOOLS, project, FileSystem, random_tree(rng))
    kinds = list(KINDS)
    if rng.random() < 0.15:
        # This user's assistant has no delete tool; one request needs it and must be declined.
        draft.without_tools("delete")
        kinds = [k for k in kinds if k not in NEEDS_DELETE]
        _delete_without_tool(rng, draft)
    for kind in rng.sample(kinds, min(len(kinds), rng.randint(*requests))):
        kind(rng, draft)
    return draft


def _files(draft: Draft) -> list[str]:
    return sorted(draft.state["files"])


def _folders(draft: Draft) -> list[str]:
    return [d for d in draft.state["dirs"] if d != "/"]


_REFERENCE = re.compile(r"\b(?:INV|P|N)-\d{4}\b")


def _unique_references(draft: Draft) -> dict[str, str]:
    """Reference -> path, for the references that appear in exactly one file (copies make twins)."""
    seen: dict[str, list[str]] = {}
    for path, text in sorted(draft.state["files"].items()):
        for reference in set(_REFERENCE.findall(text)):
            seen.setdefault(reference, []).append(path)
    return {reference: paths[0] for reference, paths in sorted(seen.items()) if len(paths) == 1}


def _references(draft: Draft) -> list[str]:
    """Every document reference (INV-, P-, N-) in the tree: distractors for a question about one file."""
    return sorted({r for text in draft.state["files"].values() for r in _REFERENCE.findall(text)})


def _free_folder(rng: random.Random, draft: Draft, path: str) -> str:
    """A folder other than ``path``'s own where its name is free."""
    name = posixpath.basename(path)
    choices = [d for d in _folders(draft) if d != posixpath.dirname(path) and not d.startswith(path + "/")
               and posixpath.join(d, name) not in draft.state["files"] and posixpath.join(d, name) not in draft.state["dirs"]]
    return rng.choice(choices) if choices else "/"


def move_file(rng: random.Random, draft: Draft) -> None:
    path = rng.choice(_files(draft))
    folder = _free_folder(rng, draft, path)
    draft.user(f"Please move {path} into the {folder} folder.")
    draft.do("move", source=path, destination=folder)
    draft.reply(f"Done: {path} is now at {posixpath.join(folder, posixpath.basename(path))}.")


def rename_file(rng: random.Random, draft: Draft) -> None:
    path = rng.choice(_files(draft))
    stem, ext = posixpath.splitext(posixpath.basename(path))
    new = f"{stem}-final{ext}"
    draft.user(f"Rename {path} to {new}, in the same folder.")
    draft.do("move", source=path, destination=posixpath.join(posixpath.dirname(path), new))
    draft.reply(f"Renamed it: it is now {posixpath.join(posixpath.dirname(path), new)}.")


def backup_copy(rng: random.Random, draft: Draft) -> None:
    folder = f"/backup/{rng.choice(['2025', 'weekly', 'important'])}"
    # A file whose name is free there: whether to replace an older backup would be the user's call.
    path = rng.choice([f for f in _files(draft) if posixpath.join(folder, posixpath.basename(f)) not in draft.state["files"]])
    draft.user(f"Make a backup copy of {path} in {folder} (create the folder if it doesn't exist).")
    if folder not in draft.state["dirs"]:
        draft.do("make_directory", path=folder, parents=True)
    draft.do("copy", source=path, destination=folder)
    draft.reply(f"Copied {path} to {posixpath.join(folder, posixpath.basename(path))}.")


def wifi_password(rng: random.Random, draft: Draft) -> None:
    draft.user("I wrote my wifi password in a wifi file somewhere. What is it?")
    found = draft.look("find_files", name="wifi*")
    text = draft.look("read_file", path=found["matches"][0])["content"]
    password = text.split("Wifi password: ")[1].split()[0]
    draft.reply(f"Your wifi password is {password} (from {found['matches'][0]}).", facts=[password],
                distractors=_references(draft))


def invoice_total(rng: random.Random, draft: Draft) -> None:
    invoices = [(number, path) for number, path in _unique_references(draft).items() if number.startswith("INV-")]
    if not invoices:
        return wifi_password(rng, draft)
    number, path = rng.choice(invoices)
    total = draft.state["files"][path].split("Total: ")[1].split()[0]
    draft.user(f"What's the total on invoice {number}? It's in one of my files.")
    draft.look("find_files", contains=number)
    draft.look("read_file", path=path)
    totals = [text.split("Total: ")[1].split()[0] for other, text in draft.state["files"].items()
              if other != path and "Total: " in text]
    invoices = [r for r in _references(draft) if r.startswith("INV-") and r != number]
    draft.reply(f"Invoice {number} ({path}) totals {total} EUR.", facts=[total],
                distractors=[t for t in totals if t != total] + invoices)


def _placeable(draft: Draft, folder: str) -> list[tuple[str, str]]:
    """(reference, path) of uniquely referenced files whose name is free in ``folder`` (or that are
    already there): "move it into /archive" must not need a new name the user never gave."""
    return [(reference, path) for reference, path in sorted(_unique_references(draft).items())
            if posixpath.dirname(path) == folder or posixpath.join(folder, posixpath.basename(path)) not in draft.state["files"]]


def find_and_archive(rng: random.Random, draft: Draft) -> None:
    candidates = _placeable(draft, "/archive")
    if not candidates:
        return invoice_total(rng, draft)
    reference, path = rng.choice(candidates)
    draft.user(f"Find the file that mentions {reference} and move it into /archive (make that folder if needed).")
    draft.look("find_files", contains=reference)
    if "/archive" not in draft.state["dirs"]:
        draft.do("make_directory", path="/archive")
    if posixpath.dirname(path) == "/archive":
        draft.reply(f"It is {path}, already in /archive, so I left it there.")
        return
    draft.do("move", source=path, destination="/archive")
    draft.reply(f"It was {path}; I moved it into /archive.")


def append_line(rng: random.Random, draft: Draft) -> None:
    path = rng.choice(_files(draft))
    line = rng.choice(EXTRA_LINES)
    draft.user(f"Add the line \"{line}\" at the end of {path}.")
    text = draft.state["files"][path]
    draft.look("read_file", path=path)
    draft.do("write_file", path=path, content=("" if text.endswith("\n") or not text else "\n") + line + "\n", append=True)
    draft.reply(f"Added the line to {path}.")


def delete_logs(rng: random.Random, draft: Draft) -> None:
    logs = sorted(p for p in draft.state["files"] if p.endswith(".log"))
    if len(logs) < 2:
        return move_file(rng, draft)
    folder = posixpath.dirname(logs[0])
    logs = [p for p in logs if posixpath.dirname(p) == folder]
    draft.user(f"Delete all the .log files in {folder}, nothing else.")
    draft.look("find_files", path=folder, name="*.log")
    for path in logs:
        draft.do("delete", path=path)
    draft.reply(f"Deleted {len(logs)} log files from {folder}.")


def first_line_summary(rng: random.Random, draft: Draft) -> None:
    path = rng.choice(_files(draft))
    folder = posixpath.dirname(path)
    target = posixpath.join(folder, "summary-of-" + posixpath.basename(path).rsplit(".", 1)[0] + ".txt")
    draft.user(f"Create {target} containing just the first line of {path}.")
    first = draft.look("read_file", path=path)["content"].split("\n")[0]
    draft.do("write_file", path=target, content=first + "\n")
    draft.reply(f"Created {target} with the line \"{first}\".")


def which_then_copy(rng: random.Random, draft: Draft) -> None:
    candidates = [(r, p) for r, p in _placeable(draft, "/shared") if not p.startswith("/shared/")]
    if not candidates:
        return invoice_total(rng, draft)
    reference, path = rng.choice(candidates)
    folder = posixpath.dirname(path)
    draft.user(f"Which file in {folder} mentions {reference}?")
    draft.look("find_files", path=folder, contains=reference)
    draft.reply(f"That's {path}.", facts=[path], distractors=[f for f in _files(draft) if f != path])
    draft.user("Thanks. Put a copy of that file in /shared, a new folder at the top level.")
    if "/shared" not in draft.state["dirs"]:
        draft.do("make_directory", path="/shared")
    draft.do("copy", source=path, destination="/shared")
    draft.reply("Done, the copy is in /shared.")


def move_folder(rng: random.Random, draft: Draft) -> None:
    folders = [d for d in _folders(draft) if d.count("/") == 1 and d not in ("/archive", "/backup", "/shared")
               and "/archive" + d not in draft.state["dirs"] and "/archive" + d not in draft.state["files"]]
    if not folders:
        return move_file(rng, draft)
    folder = rng.choice(folders)
    draft.user(f"Move the whole {folder} folder into /archive, creating /archive if needed.")
    if "/archive" not in draft.state["dirs"]:
        draft.do("make_directory", path="/archive")
    draft.do("move", source=folder, destination="/archive")
    draft.reply(f"Moved {folder} to /archive{folder}.")


def impossible(rng: random.Random, draft: Draft) -> None:
    request, reason = rng.choice(IMPOSSIBLE)
    draft.user(request.format(f=rng.choice(_files(draft)), d=rng.choice(_folders(draft))))
    draft.reply(f"Sorry, I can't do that: {reason}.", decline=True)


def ambiguous_name(rng: random.Random, draft: Draft) -> None:
    todos = [f for f in _files(draft) if posixpath.basename(f) == "todo.txt"]
    if len(todos) != 2:
        return impossible(rng, draft)
    draft.user("What does my todo.txt say?")
    draft.look("find_files", name="todo.txt")
    draft.reply(f"You have two: {todos[0]} and {todos[1]}. Which one do you mean?", facts=todos, clarify=True,
                distractors=[f for f in _files(draft) if f not in todos])
    chosen = rng.choice(todos)
    draft.user(f"The one in {posixpath.dirname(chosen)}.")
    text = draft.look("read_file", path=chosen)["content"].strip()
    other = next(t for t in todos if t != chosen)
    draft.reply(f"It says: {text}", facts=[text.split(": ", 1)[1].rstrip(".")],
                distractors=[draft.state["files"][other].strip().split(": ", 1)[1].rstrip("."), other])


def _delete_without_tool(rng: random.Random, draft: Draft) -> None:
    path = rng.choice(_files(draft))
    draft.user(f"Delete {path}, I don't need it any more.")
    draft.reply("Sorry, I can't delete files: I don't have a delete tool here.", decline=True)


KINDS: list[Callable[[random.Random, Draft], None]] = [
    move_file, rename_file, backup_copy, wifi_password, invoice_total, find_and_archive, append_line,
    delete_logs, first_line_summary, which_then_copy, move_folder, impossible, ambiguous_name,
]
NEEDS_DELETE = {delete_logs}
