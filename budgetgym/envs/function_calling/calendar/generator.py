"""Seeded task drafts for the calendar: a working week of meetings, then requests drawn from the
kinds below. Today is Monday 2025-03-03; requests name days by weekday and date. ``requests`` is how
many kinds (two or three by default; eight to ten for a long conversation,
``generate.LONG_REQUESTS``); each kind makes one or two user turns."""

from __future__ import annotations

import datetime
import random
from typing import Callable

from budgetgym.envs.function_calling.calendar.backend import Calendar, clock, minutes, project, weekday
from budgetgym.envs.function_calling.calendar.tools import TOOLS
from budgetgym.envs.function_calling.domain import REQUESTS
from budgetgym.envs.function_calling.drafting import Draft

TODAY = "2025-03-03"
WEEK = ["2025-03-03", "2025-03-04", "2025-03-05", "2025-03-06", "2025-03-07"]
TITLES = ["Design review", "Budget sync", "Dentist", "1:1 with Dana", "Team retro", "Client call with Acme",
          "Gym", "Lunch with Chen", "Hiring panel", "Quarterly planning", "Vendor demo", "Book club"]
NEW_TITLES = ["Deep work", "Coffee with Priya", "Haircut", "Interview prep", "Code review", "Yoga"]
PEOPLE = ["Dana", "Chen", "Priya", "Marco", "Lena", "Tomas", "Aisha"]
IMPOSSIBLE = [
    ("Email everyone in {title} a reminder about it.", "I can't send emails, only manage calendar events"),
    ("Make {title} repeat every week.", "the calendar tools can't create recurring events"),
    ("Book me a flight to Berlin for {day}.", "I can't book travel, only calendar events"),
    ("Set an alarm for 7am on {day}.", "there is no alarm tool"),
    ("Tell me the weather forecast for {day}.", "I have no weather tool"),
]


def _day(date: str) -> str:
    return f"{weekday(date)} {date}"


def date_spellings(date: str) -> list[str]:
    """A date as a fact, in the spellings people use: "2025-03-05", "March 5", "March 5th", ..."""
    day = datetime.date.fromisoformat(date)
    ordinal = f"{day.day}{'th' if 10 < day.day < 14 else {1: 'st', 2: 'nd', 3: 'rd'}.get(day.day % 10, 'th')}"
    return [date, f"{day:%B} {day.day}", f"{day:%B} {ordinal}", f"{day:%b} {day.day}", f"{day.day} {day:%B}"]


def clock_spellings(time: str) -> list[str]:
    """A time as a fact: "09:30", "9:30", "9:30 am"; "13:00", "1:00 pm", "1 pm"."""
    hour, minute = int(time[:2]), time[3:]
    twelve, half = (hour - 1) % 12 + 1, "am" if hour < 12 else "pm"
    spellings = [time, f"{hour}:{minute}", f"{twelve}:{minute} {half}", f"{twelve}:{minute}{half}"]
    if minute == "00":
        spellings += [f"{twelve} {half}", f"{twelve}{half}"]
    return list(dict.fromkeys(spellings))


def random_week(rng: random.Random) -> dict:
    events: dict[str, dict] = {}
    for date in WEEK[1:]:
        if rng.random() < 0.6:
            events[f"e{len(events) + 1}"] = {"id": f"e{len(events) + 1}", "title": "Standup", "date": date,
                                             "start": "09:00", "end": "09:15", "attendees": ["Team"]}
    for title in rng.sample(TITLES, rng.randint(5, 7)):
        for _ in range(20):
            date = rng.choice(WEEK[1:])
            start = rng.randrange(9 * 60 + 30, 16 * 60 + 30, 30)
            end = start + rng.choice([30, 60, 90])
            if all(e["date"] != date or not (minutes(e["start"]) < end and start < minutes(e["end"])) for e in events.values()):
                event_id = f"e{len(events) + 1}"
                attendees = sorted(rng.sample(PEOPLE, rng.randint(0, 2)))
                events[event_id] = {"id": event_id, "title": title, "date": date, "start": clock(start),
                                    "end": clock(end), "attendees": attendees}
                break
    return {"today": TODAY, "events": events, "next_id": len(events)}


def generate(rng: random.Random, requests: tuple[int, int] = REQUESTS) -> Draft:
    draft = Draft("calendar", TOOLS, project, Calendar, random_week(rng))
    for kind in rng.sample(KINDS, min(len(KINDS), rng.randint(*requests))):
        kind(rng, draft)
    return draft


def _titled(draft: Draft) -> list[dict]:
    """Events with a title that occurs once, so a request can name them unambiguously."""
    events = list(draft.state["events"].values())
    return sorted((e for e in events if sum(o["title"] == e["title"] for o in events) == 1), key=lambda e: int(e["id"][1:]))


def _pick(rng: random.Random, draft: Draft) -> dict | None:
    """An event a request can name by its title (not a standup), or None when earlier requests left none."""
    events = [e for e in _titled(draft) if e["title"] != "Standup"]
    return rng.choice(events) if events else None


def _others(draft: Draft, event: dict) -> list[dict]:
    """Every event but ``event``, in id order."""
    return [e for e in sorted(draft.state["events"].values(), key=lambda e: int(e["id"][1:])) if e["id"] != event["id"]]


def _free(draft: Draft, date: str, length: int) -> list[int]:
    """Start minutes (on the half hour, 09:30-17:00) where a meeting of ``length`` fits on ``date``."""
    busy = [(minutes(e["start"]), minutes(e["end"])) for e in draft.state["events"].values() if e["date"] == date]
    return [s for s in range(9 * 60 + 30, 17 * 60 + 1 - length, 30) if all(not (b < s + length and s < e) for b, e in busy)]


def _new_title(draft: Draft) -> str:
    used = {e["title"] for e in draft.state["events"].values()}
    return next(t for t in NEW_TITLES if t not in used)


def book(rng: random.Random, draft: Draft) -> None:
    length = rng.choice([30, 60])
    dates = [d for d in WEEK[1:] if _free(draft, d, length)]
    if not dates:
        return agenda(rng, draft)
    date = rng.choice(dates)
    start = rng.choice(_free(draft, date, length))
    title = _new_title(draft)
    draft.user(f"Put \"{title}\" on my calendar on {_day(date)} from {clock(start)} to {clock(start + length)}.")
    draft.do("create_event", title=title, date=date, start=clock(start), end=clock(start + length))
    draft.reply(f"Booked {title} on {_day(date)}, {clock(start)}-{clock(start + length)}.")


def first_free_hour(rng: random.Random, draft: Draft) -> None:
    date = rng.choice(WEEK[1:])
    title = _new_title(draft)
    draft.user(f"Book \"{title}\" for one hour at the earliest free time on {_day(date)} (between 09:00 and 18:00).")
    slots = draft.look("find_free_slots", date=date, duration_minutes=60)["free"]
    start = slots[0]["start"]
    draft.do("create_event", title=title, date=date, start=start, end=clock(minutes(start) + 60))
    draft.reply(f"Booked {title} on {_day(date)} at {start}.")


def move(rng: random.Random, draft: Draft) -> None:
    event = _pick(rng, draft)
    if event is None:
        return book(rng, draft)
    length = minutes(event["end"]) - minutes(event["start"])
    date = rng.choice([d for d in WEEK[1:] if _free(draft, d, length)] or [event["date"]])
    starts = [s for s in _free(draft, date, length) if clock(s) != event["start"] or date != event["date"]]
    if not starts:
        return cancel(rng, draft)
    start = rng.choice(starts)
    draft.user(f"Move my \"{event['title']}\" to {_day(date)} at {clock(start)}, same length.")
    draft.look("search_events", query=event["title"])
    draft.do("reschedule_event", event_id=event["id"], date=date, start=clock(start), end=clock(start + length))
    draft.reply(f"Moved {event['title']} to {_day(date)}, {clock(start)}-{clock(start + length)}.")


def cancel(rng: random.Random, draft: Draft) -> None:
    event = _pick(rng, draft)
    if event is None:
        return book(rng, draft)
    draft.user(f"Cancel \"{event['title']}\", it's not happening.")
    draft.look("search_events", query=event["title"])
    draft.do("cancel_event", event_id=event["id"])
    draft.reply(f"Cancelled {event['title']} ({_day(event['date'])}).")


def invite(rng: random.Random, draft: Draft) -> None:
    event = _pick(rng, draft)
    people = [p for p in PEOPLE if event is not None and p not in event["attendees"]]
    if not people:
        return book(rng, draft)
    person = rng.choice(people)
    draft.user(f"Add {person} to \"{event['title']}\".")
    draft.look("search_events", query=event["title"])
    draft.do("add_attendee", event_id=event["id"], name=person)
    draft.reply(f"{person} is now invited to {event['title']}.")


def when(rng: random.Random, draft: Draft) -> None:
    event = _pick(rng, draft)
    if event is None:
        return agenda(rng, draft)
    draft.user(f"When is my \"{event['title']}\"?")
    draft.look("search_events", query=event["title"])
    draft.reply(f"{event['title']} is on {_day(event['date'])} from {event['start']} to {event['end']}.",
                facts=[date_spellings(event["date"]), clock_spellings(event["start"])],
                distractors=[clock_spellings(e["start"]) for e in _others(draft, event)
                             if e["start"] not in (event["start"], event["end"])])


def agenda(rng: random.Random, draft: Draft) -> None:
    date = rng.choice(WEEK[1:])
    titles = [e["title"] for e in sorted(draft.state["events"].values(), key=lambda e: e["start"]) if e["date"] == date]
    draft.user(f"What's on my calendar on {_day(date)}? Just the titles.")
    draft.look("list_events", date=date)
    if titles:
        others = sorted({e["title"] for e in draft.state["events"].values() if e["date"] != date} - set(titles))
        draft.reply(f"On {_day(date)} you have: {', '.join(titles)}.", facts=titles, distractors=others)
    else:
        draft.reply(f"Nothing: {_day(date)} is free.")


def conflict(rng: random.Random, draft: Draft) -> None:
    event = _pick(rng, draft)
    if event is None:
        return agenda(rng, draft)
    title = _new_title(draft)
    draft.user(f"Book \"{title}\" on {_day(event['date'])} from {event['start']} to {event['end']}. "
               "If that time is taken, don't move anything: just tell me what's in the way.")
    draft.look("list_events", date=event["date"])
    same_day = [e["title"] for e in _others(draft, event)
                if e["date"] == event["date"] and e["title"] != event["title"]]
    draft.reply(f"I can't book it: that time conflicts with {event['title']}.", facts=[event["title"]], decline=True,
                distractors=same_day)


def clear_afternoon(rng: random.Random, draft: Draft) -> None:
    date = max(WEEK[1:], key=lambda d: sum(e["date"] == d and e["start"] >= "12:00" for e in draft.state["events"].values()))
    afternoon = sorted((e for e in draft.state["events"].values() if e["date"] == date and e["start"] >= "12:00"),
                       key=lambda e: e["start"])
    if len(afternoon) < 2:
        return cancel(rng, draft)
    draft.user(f"Clear my {weekday(date)} ({date}) afternoon: cancel everything starting at 12:00 or later that day.")
    draft.look("list_events", date=date)
    for event in afternoon:
        draft.do("cancel_event", event_id=event["id"])
    draft.reply(f"Cancelled {len(afternoon)} events: {', '.join(e['title'] for e in afternoon)}.")


def free_then_book(rng: random.Random, draft: Draft) -> None:
    date = rng.choice(WEEK[1:])
    draft.user(f"When is my first free 90 minutes on {_day(date)}, between 09:00 and 18:00?")
    slots = draft.look("find_free_slots", date=date, duration_minutes=90)["free"]
    if not slots:
        draft.reply(f"There is no free 90-minute slot on {_day(date)}.")
        return
    start = slots[0]["start"]
    draft.reply(f"Your first free 90 minutes start at {start}.", facts=[clock_spellings(start)],
                distractors=[clock_spellings(s["start"]) for s in slots[1:] if s["start"] != slots[0]["end"]])
    draft.user("Great, block that time as \"Focus time\".")
    draft.do("create_event", title="Focus time", date=date, start=start, end=clock(minutes(start) + 90))
    draft.reply(f"Blocked {start}-{clock(minutes(start) + 90)} as Focus time.")


def impossible(rng: random.Random, draft: Draft) -> None:
    request, reason = rng.choice(IMPOSSIBLE)
    event = _pick(rng, draft)
    title = event["title"] if event is not None else "Standup"
    draft.user(request.format(title=title, day=_day(rng.choice(WEEK[1:]))))
    draft.reply(f"Sorry, I can't do that: {reason}.", decline=True)


KINDS: list[Callable[[random.Random, Draft], None]] = [
    book, first_free_hour, move, cancel, invite, when, agenda, conflict, clear_afternoon, free_then_book, impossible,
]
