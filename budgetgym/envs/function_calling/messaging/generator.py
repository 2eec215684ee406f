"""Seeded task drafts for the messaging app: a contact list and a mailbox, then requests drawn from
the kinds below. ``requests`` is how many kinds (two or three by default; eight to ten for a long
conversation, ``generate.LONG_REQUESTS``); each kind makes one or two user turns."""

from __future__ import annotations

import random
import re
from typing import Callable

from budgetgym.envs.function_calling.domain import REQUESTS
from budgetgym.envs.function_calling.drafting import Draft
from budgetgym.envs.function_calling.messaging.backend import Mailbox, project
from budgetgym.envs.function_calling.messaging.tools import TOOLS

OWNER = "Jordan Avery"
FIRST = ["Alice", "Bruno", "Chen", "Dana", "Elif", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kemi", "Lena", "Sam"]
LAST = ["Lee", "Ortiz", "Novak", "Okafor", "Silva", "Berg", "Haddad", "Kowalski", "Moreau", "Tanaka"]
SENDERS = ["deals@shopmart.example", "newsletter@citynews.example", "noreply@parcelpost.example"]
REPLIES = ["Running ten minutes late.", "See you at six.", "Thanks, got it!", "Can we move it to Friday?",
           "Happy birthday!", "Call me when you land.", "Yes, 12:30 works for me."]
IMPOSSIBLE = [
    ("Call {name} for me, please.", "I can only send text messages, I can't place calls"),
    ("Block {sender} so they can't message me again.", "there is no blocking tool"),
    ("Schedule a message to {name} for tomorrow at 8am.", "messages can't be scheduled with these tools"),
    ("Send {name} the photo from my camera roll.", "I can't attach photos, only send text"),
    ("Create a group chat with {name} and {other}.", "there is no group chat tool"),
]


def _inbox_texts(rng: random.Random) -> list[str]:
    code = rng.randint(1000, 9999)
    return [
        f"The door code for the office is {code}.",
        f"Lunch on Friday at {rng.choice(['12:00', '12:30', '13:00'])}? Let me know.",
        f"My new address is {rng.randint(2, 99)} {rng.choice(['Elm', 'Oak', 'Pine', 'Cedar'])} Street.",
        f"The meeting room is {rng.choice(['B', 'C', 'D'])}{rng.randint(100, 499)}.",
        f"I paid back the {rng.randint(10, 90)} euros I owed you.",
        "Are you coming to the game on Sunday?",
        f"Flight {rng.choice(['LH', 'AF', 'KL'])}{rng.randint(100, 999)} lands at "
        f"{rng.randint(10, 21)}:{rng.choice(['05', '20', '45'])}.",
    ]


def random_mailbox(rng: random.Random) -> dict:
    names = set()
    while len(names) < rng.randint(6, 8):
        names.add(f"{rng.choice(FIRST)} {rng.choice(LAST)}")
    if rng.random() < 0.5:
        # Two contacts who share a first name: "message Sam" is then ambiguous.
        names |= {"Sam Lee", "Sam Ortiz"}
    contacts = {}
    for name in sorted(names):
        first, last = name.split()
        phone = f"+1 555 {rng.randint(100, 999)} {rng.randint(1000, 9999)}" if rng.random() < 0.8 else None
        contacts[name] = {"email": f"{first.lower()}.{last.lower()}@mail.example", "phone": phone}
    messages = {}
    texts = _inbox_texts(rng)
    rng.shuffle(texts)
    people = sorted(contacts)
    senders = rng.sample(people, min(5, len(people))) + [rng.choice(SENDERS)] * 2
    for number, sender in enumerate(senders, 1):
        text = texts[number % len(texts)] if "@" not in sender else f"Offer {rng.randint(10, 99)}: big discounts this week!"
        messages[f"m{number}"] = {"id": f"m{number}", "folder": "inbox", "from": sender, "to": OWNER, "text": text,
                                  "read": rng.random() < 0.5, "trashed": False}
    if rng.random() < 0.4:
        # A message from a person already in the trash: "get it back" requests use it.
        messages[f"m{rng.randint(1, len(senders) - 2)}"]["trashed"] = True
    return {"owner": OWNER, "contacts": contacts, "messages": messages, "next_id": len(messages)}


def generate(rng: random.Random, requests: tuple[int, int] = REQUESTS) -> Draft:
    draft = Draft("messaging", TOOLS, project, Mailbox, random_mailbox(rng))
    kinds = list(KINDS)
    if rng.random() < 0.15:
        draft.without_tools("send_message")
        kinds = [k for k in kinds if k not in NEEDS_SEND]
        name = rng.choice(_people(draft))
        draft.user(f"Send {name} a message saying \"{rng.choice(REPLIES)}\"")
        draft.reply("Sorry, I can't send messages here: I don't have a tool to send them.", decline=True)
    for kind in rng.sample(kinds, min(len(kinds), rng.randint(*requests))):
        kind(rng, draft)
    return draft


def _people(draft: Draft) -> list[str]:
    return sorted(draft.state["contacts"])


def _inbox(draft: Draft, sender: str | None = None) -> list[dict]:
    return [m for m in draft.state["messages"].values()
            if m["folder"] == "inbox" and not m["trashed"] and (sender is None or m["from"] == sender)]


def send(rng: random.Random, draft: Draft) -> None:
    name = rng.choice([p for p in _people(draft) if not p.startswith("Sam ")] or _people(draft))
    text = rng.choice(REPLIES)
    draft.user(f"Text {name}: \"{text}\"")
    draft.do("send_message", to=name, text=text)
    draft.reply(f"Sent to {name}.")


def forward(rng: random.Random, draft: Draft) -> None:
    senders = sorted({m["from"] for m in _inbox(draft) if m["from"] in draft.state["contacts"]})
    if not senders:
        return send(rng, draft)
    sender = rng.choice(senders)
    recipient = rng.choice([p for p in _people(draft) if p != sender])
    latest = max(_inbox(draft, sender), key=lambda m: int(m["id"][1:]))
    draft.user(f"Forward the latest message from {sender} to {recipient}: send exactly its text.")
    draft.look("list_messages", contact=sender)
    draft.look("read_message", message_id=latest["id"])
    draft.do("send_message", to=recipient, text=latest["text"])
    draft.reply(f"Forwarded {sender}'s message to {recipient}.")


def door_code(rng: random.Random, draft: Draft) -> None:
    found = [m for m in draft.state["messages"].values() if "door code" in m["text"]]
    if not found or found[0]["trashed"]:
        return inbox_count(rng, draft)
    code = found[0]["text"].split()[-1].rstrip(".")
    draft.user("Someone sent me the office door code. What is it?")
    draft.look("search_messages", query="door code")
    others = [n for m in _inbox(draft) if m is not found[0] for n in re.findall(r"\b\d{3,}\b", m["text"])]
    draft.reply(f"The office door code is {code} (from {found[0]['from']}).", facts=[code], distractors=others)


def inbox_count(rng: random.Random, draft: Draft) -> None:
    # Not "how many unread": reading a message marks it read, so that count would depend on how the
    # agent looked, which the scoring does not track.
    draft.user("How many messages are in my inbox right now, not counting the trash?")
    draft.look("list_messages")
    count = len(_inbox(draft))
    everything = sum(m["folder"] == "inbox" for m in draft.state["messages"].values())
    draft.reply(f"You have {count} messages in your inbox.", facts=[str(count)],
                distractors=[str(everything)] if everything != count else [])


def clear_sender(rng: random.Random, draft: Draft) -> None:
    senders = sorted({m["from"] for m in _inbox(draft) if "@" in m["from"]})
    if not senders:
        return add_contact(rng, draft)
    sender = senders[0]
    draft.user(f"Delete every message from {sender} in my inbox.")
    draft.look("list_messages", contact=sender)
    for message in sorted(_inbox(draft, sender), key=lambda m: int(m["id"][1:])):
        draft.do("delete_message", message_id=message["id"])
    draft.reply(f"Moved all messages from {sender} to the trash.")


def add_contact(rng: random.Random, draft: Draft) -> None:
    name = next(f"{f} {l}" for f in FIRST for l in LAST if f"{f} {l}" not in draft.state["contacts"] and f != "Sam")
    first, last = name.split()
    phone = f"+1 555 {rng.randint(100, 999)} {rng.randint(1000, 9999)}"
    email = f"{first[0].lower()}{last.lower()}@work.example"
    draft.user(f"Add {name} to my contacts: email {email}, phone {phone}.")
    draft.do("add_contact", name=name, email=email, phone=phone)
    draft.reply(f"Added {name}.")


def new_number(rng: random.Random, draft: Draft) -> None:
    name = rng.choice(_people(draft))
    phone = f"+1 555 {rng.randint(100, 999)} {rng.randint(1000, 9999)}"
    draft.user(f"{name} has a new phone number, {phone}. Please update the contact.")
    draft.do("update_contact", name=name, phone=phone)
    draft.reply(f"Updated {name}'s number to {phone}.")


def email_of(rng: random.Random, draft: Draft) -> None:
    name = rng.choice(_people(draft))
    email = draft.state["contacts"][name]["email"]
    draft.user(f"What's {name}'s email address?")
    draft.look("find_contact", query=name)
    draft.reply(f"{name}'s email is {email}.", facts=[email],
                distractors=[c["email"] for p, c in sorted(draft.state["contacts"].items()) if p != name])


def ambiguous_sam(rng: random.Random, draft: Draft) -> None:
    sams = [p for p in _people(draft) if p.startswith("Sam ")]
    if len(sams) != 2:
        return email_of(rng, draft)
    text = rng.choice(REPLIES)
    draft.user(f"Send Sam a message: \"{text}\"")
    draft.look("find_contact", query="Sam")
    draft.reply(f"You have two contacts called Sam: {sams[0]} and {sams[1]}. Which one?", facts=sams, clarify=True,
                distractors=[p for p in _people(draft) if p not in sams])
    chosen = rng.choice(sams)
    draft.user(f"{chosen}, please.")
    draft.do("send_message", to=chosen, text=text)
    draft.reply(f"Sent to {chosen}.")


def reply_lunch(rng: random.Random, draft: Draft) -> None:
    asking = [m for m in _inbox(draft) if m["text"].startswith("Lunch on Friday") and m["from"] in draft.state["contacts"]]
    if not asking:
        return send(rng, draft)
    sender = asking[0]["from"]
    draft.user("Someone asked me about lunch on Friday. Reply to them: \"Yes, see you there.\"")
    draft.look("search_messages", query="lunch")
    draft.do("send_message", to=sender, text="Yes, see you there.")
    draft.reply(f"Replied to {sender}.")


def restore(rng: random.Random, draft: Draft) -> None:
    trashed = [m for m in draft.state["messages"].values() if m["trashed"] and m["folder"] == "inbox"]
    # A person's only message in the trash, so "the message from X" names one.
    trashed = [m for m in trashed if m["from"] in draft.state["contacts"]
               and sum(other["from"] == m["from"] for other in trashed) == 1]
    if not trashed:
        return clear_sender(rng, draft)
    message = trashed[0]
    draft.user(f"I deleted a message from {message['from']} by mistake. Can you get it back?")
    draft.look("list_messages", folder="trash")
    draft.do("restore_message", message_id=message["id"])
    draft.reply(f"Restored it to your inbox: \"{message['text']}\"")


def impossible(rng: random.Random, draft: Draft) -> None:
    request, reason = rng.choice(IMPOSSIBLE)
    name, other = rng.sample(_people(draft), 2)
    draft.user(request.format(name=name, other=other, sender=rng.choice(SENDERS)))
    draft.reply(f"Sorry, I can't do that: {reason}.", decline=True)


KINDS: list[Callable[[random.Random, Draft], None]] = [
    send, forward, door_code, inbox_count, clear_sender, add_contact, new_number, email_of, ambiguous_sam,
    reply_lunch, restore, impossible,
]
NEEDS_SEND = {send, forward, ambiguous_sam, reply_lunch}
