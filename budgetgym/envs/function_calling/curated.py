"""The fixed, hand-written tasks: longer conversations with the traps a generator does not set
(a request that depends on two earlier answers, a correction of an earlier request, an error the
agent has to read and report). Each is written as a draft, so its expected states are computed by
the real tools, never typed by hand."""

from __future__ import annotations

from typing import Callable

from budgetgym.envs.function_calling.banking.backend import Bank, dollars
from budgetgym.envs.function_calling.banking.backend import project as bank_project
from budgetgym.envs.function_calling.banking.generator import CUSTOMER, PAYEES, PRICES
from budgetgym.envs.function_calling.banking.tools import TOOLS as BANK_TOOLS
from budgetgym.envs.function_calling.calendar.backend import Calendar
from budgetgym.envs.function_calling.calendar.backend import project as calendar_project
from budgetgym.envs.function_calling.calendar.generator import TODAY, clock_spellings
from budgetgym.envs.function_calling.calendar.tools import TOOLS as CALENDAR_TOOLS
from budgetgym.envs.function_calling.drafting import Draft
from budgetgym.envs.function_calling.filesystem.backend import FileSystem
from budgetgym.envs.function_calling.filesystem.backend import project as fs_project
from budgetgym.envs.function_calling.filesystem.tools import TOOLS as FS_TOOLS
from budgetgym.envs.function_calling.messaging.backend import Mailbox
from budgetgym.envs.function_calling.messaging.backend import project as mail_project
from budgetgym.envs.function_calling.messaging.generator import OWNER
from budgetgym.envs.function_calling.messaging.tools import TOOLS as MAIL_TOOLS


def _files(files: dict[str, str]) -> dict:
    dirs = {"/"}
    for path in files:
        parts = path.split("/")[1:-1]
        dirs.update("/" + "/".join(parts[: i + 1]) for i in range(len(parts)))
    return {"cwd": "/", "dirs": sorted(dirs), "files": dict(sorted(files.items()))}


def tax_receipts() -> Draft:
    d = Draft("filesystem", FS_TOOLS, fs_project, FileSystem, _files({
        "/downloads/receipt-pharmacy.txt": "Receipt: City Pharmacy\nAmount: 42.10\n",
        "/downloads/receipt-glasses.txt": "Receipt: Optic Store\nAmount: 310.00\n",
        "/downloads/movie.txt": "Ticket: Cinema 5\nAmount: 12.50\n",
        "/documents/receipt-dentist.txt": "Receipt: Dr. Patel Dental\nAmount: 185.40\n",
        "/documents/taxes/2023/return.txt": "Tax return 2023: filed\n",
    }))
    d.user("Gather all my receipt-*.txt files from anywhere into a new folder /documents/taxes/2024.")
    d.look("find_files", name="receipt-*.txt")
    d.do("make_directory", path="/documents/taxes/2024")
    for path in ("/documents/receipt-dentist.txt", "/downloads/receipt-glasses.txt", "/downloads/receipt-pharmacy.txt"):
        d.do("move", source=path, destination="/documents/taxes/2024")
    d.reply("Moved the 3 receipts (dentist, glasses, pharmacy) into /documents/taxes/2024.")
    d.user("What do they add up to?")
    for name in ("receipt-dentist.txt", "receipt-glasses.txt", "receipt-pharmacy.txt"):
        d.look("read_file", path=f"/documents/taxes/2024/{name}")
    # The cinema ticket is not a receipt: a total with it (550.00), or its amount, is wrong.
    d.reply("They add up to 537.50 (185.40 + 310.00 + 42.10).", facts=["537.50"], distractors=["550.00", "12.50"])
    d.user("Write that total into /documents/taxes/2024/total.txt as the single line \"Total: 537.50\".")
    d.do("write_file", path="/documents/taxes/2024/total.txt", content="Total: 537.50\n")
    d.reply("Created total.txt with \"Total: 537.50\".")
    d.user("Now email the whole folder to my accountant.")
    d.reply("Sorry, I can't send email: I only have file tools.", decline=True)
    return d


def project_cleanup() -> Draft:
    d = Draft("filesystem", FS_TOOLS, fs_project, FileSystem, _files({
        "/projects/app/draft.md": "# App\nA small app.\n",
        "/projects/app/main.py": "print('hello')\n",
        "/projects/app/tmp/cache-1.bin": "xx\n",
        "/projects/app/tmp/cache-2.bin": "yy\n",
        "/notes/keys.txt": "API key for the weather service: WX-55-ALPHA\n",
        "/notes/ideas.txt": "Dark mode\n",
    }))
    d.user("In /projects/app, rename draft.md to README.md.")
    d.do("move", source="/projects/app/draft.md", destination="/projects/app/README.md")
    d.reply("Renamed it to /projects/app/README.md.")
    d.user("Delete the tmp folder in that project, with everything in it.")
    d.do("delete", path="/projects/app/tmp", recursive=True)
    d.reply("Deleted /projects/app/tmp and its 2 files.")
    d.user("Where did I note the API key for the weather service, and what is it?")
    d.look("find_files", contains="API key")
    d.look("read_file", path="/notes/keys.txt")
    d.reply("It's in /notes/keys.txt: WX-55-ALPHA.", facts=["/notes/keys.txt", "WX-55-ALPHA"],
            distractors=["/notes/ideas.txt"])
    d.user("Copy that note into the project folder as /projects/app/.env.")
    d.do("copy", source="/notes/keys.txt", destination="/projects/app/.env")
    d.reply("Copied it to /projects/app/.env.")
    return d


def _mailbox(contacts: dict[str, tuple[str, str | None]], inbox: list[tuple[str, str, bool]]) -> dict:
    messages = {f"m{i}": {"id": f"m{i}", "folder": "inbox", "from": sender, "to": OWNER, "text": text, "read": read,
                          "trashed": False} for i, (sender, text, read) in enumerate(inbox, 1)}
    return {"owner": OWNER, "contacts": {n: {"email": e, "phone": p} for n, (e, p) in contacts.items()},
            "messages": messages, "next_id": len(messages)}


def spare_key() -> Draft:
    d = Draft("messaging", MAIL_TOOLS, mail_project, Mailbox, _mailbox(
        {"Ana Silva": ("ana.silva@mail.example", "+1 555 201 4410"), "Ben Okafor": ("ben.okafor@mail.example", None),
         "Chen Novak": ("chen.novak@mail.example", "+1 555 310 9921")},
        [("Ana Silva", "I left the spare key under the blue pot.", True),
         ("deals@shopmart.example", "Offer 40: big discounts this week!", False),
         ("Ben Okafor", "New phone! Save this number: +1 555 777 0101", False),
         ("deals@shopmart.example", "Offer 41: last chance!", False)]))
    d.user("Who told me where the spare key is, and where is it?")
    d.look("search_messages", query="spare key")
    d.reply("Ana Silva: it's under the blue pot.", facts=["Ana Silva", "blue pot"],
            distractors=["Ben Okafor", "Chen Novak"])
    d.user("Ben sent me his new number. Save it on his contact.")
    d.look("list_messages", contact="Ben Okafor")
    d.do("update_contact", name="Ben Okafor", phone="+1 555 777 0101")
    d.reply("Saved +1 555 777 0101 for Ben Okafor.")
    d.user("Text Ana: \"Thanks, found the key!\"")
    d.do("send_message", to="Ana Silva", text="Thanks, found the key!")
    d.reply("Sent to Ana Silva.")
    d.user("And get rid of the shop spam, please.")
    d.look("list_messages", contact="deals@shopmart.example")
    d.do("delete_message", message_id="m2")
    d.do("delete_message", message_id="m4")
    d.reply("Moved the 2 messages from deals@shopmart.example to the trash.")
    return d


def two_alexes() -> Draft:
    d = Draft("messaging", MAIL_TOOLS, mail_project, Mailbox, _mailbox(
        {"Alex Berg": ("alex.berg@mail.example", "+1 555 100 2000"), "Alex Moreau": ("alex.moreau@mail.example", None),
         "Grace Haddad": ("grace.haddad@mail.example", "+1 555 900 1234")},
        [("Grace Haddad", "Dinner Saturday at 8? Bring Alex.", False)]))
    d.user("Tell Alex: \"Dinner at Grace's on Saturday at 8.\"")
    d.look("find_contact", query="Alex")
    d.reply("You have two contacts named Alex: Alex Berg and Alex Moreau. Which one?",
            facts=["Alex Berg", "Alex Moreau"], distractors=["Grace Haddad"], clarify=True)
    d.user("Both of them, actually.")
    d.do("send_message", to="Alex Berg", text="Dinner at Grace's on Saturday at 8.")
    d.do("send_message", to="Alex Moreau", text="Dinner at Grace's on Saturday at 8.")
    d.reply("Sent it to Alex Berg and Alex Moreau.")
    d.user("Alex Moreau's email is wrong, it's amoreau@studio.example now. Fix it, and tell me Alex Berg's phone number.")
    d.do("update_contact", name="Alex Moreau", email="amoreau@studio.example")
    d.look("find_contact", query="Alex Berg")
    d.reply("Updated Alex Moreau's email. Alex Berg's phone is +1 555 100 2000.", facts=["+1 555 100 2000"],
            distractors=["+1 555 900 1234"])
    d.user("Reply to Grace: \"Count us in!\"")
    d.do("send_message", to="Grace Haddad", text="Count us in!")
    d.reply("Replied to Grace Haddad.")
    return d


def _week(events: list[tuple[str, str, str, str, list[str]]]) -> dict:
    table = {f"e{i}": {"id": f"e{i}", "title": t, "date": day, "start": s, "end": e, "attendees": sorted(a)}
             for i, (t, day, s, e, a) in enumerate(events, 1)}
    return {"today": TODAY, "events": table, "next_id": len(table)}


def dentist_shuffle() -> Draft:
    d = Draft("calendar", CALENDAR_TOOLS, calendar_project, Calendar, _week([
        ("Dentist", "2025-03-04", "10:00", "11:00", []),
        ("Budget sync", "2025-03-06", "10:00", "11:00", ["Dana", "Marco"]),
        ("Team retro", "2025-03-06", "15:00", "16:00", ["Team"]),
        ("Gym", "2025-03-05", "07:00", "08:00", []),
    ]))
    d.user("Move my dentist appointment to Thursday 2025-03-06 at the same time. If something is in the way, "
           "tell me what it is and don't change anything.")
    d.look("search_events", query="Dentist")
    d.look("list_events", date="2025-03-06")
    d.reply("I can't: Thursday 10:00-11:00 conflicts with Budget sync.", facts=["Budget sync"], decline=True,
            distractors=["Team retro"])
    d.user("OK, then move the Budget sync to 13:00-14:00 that day first, and then the dentist.")
    d.do("reschedule_event", event_id="e2", date="2025-03-06", start="13:00", end="14:00")
    d.do("reschedule_event", event_id="e1", date="2025-03-06", start="10:00", end="11:00")
    d.reply("Moved Budget sync to 13:00-14:00 and the dentist to Thursday 10:00-11:00.")
    d.user("Add Priya to the budget sync, and tell me who's in it now.")
    d.do("add_attendee", event_id="e2", name="Priya")
    d.reply("Added Priya: the budget sync now has Dana, Marco and Priya.", facts=["Dana", "Marco", "Priya"])
    d.user("Make the retro repeat every two weeks.")
    d.reply("Sorry, I can't create recurring events with these tools.", decline=True)
    return d


def focus_week() -> Draft:
    d = Draft("calendar", CALENDAR_TOOLS, calendar_project, Calendar, _week([
        ("Standup", "2025-03-04", "09:00", "09:30", ["Team"]),
        ("Design review", "2025-03-04", "09:30", "11:00", ["Lena"]),
        ("Lunch with Chen", "2025-03-04", "12:00", "13:00", ["Chen"]),
        ("Standup", "2025-03-05", "09:00", "09:30", ["Team"]),
        ("Vendor demo", "2025-03-05", "14:00", "15:00", ["Aisha"]),
    ]))
    d.user("What's my first free 2-hour window on Tuesday 2025-03-04 between 09:00 and 18:00?")
    d.look("find_free_slots", date="2025-03-04", duration_minutes=120)
    d.reply("Tuesday from 13:00 (free until 18:00).", facts=[clock_spellings("13:00")])
    d.user("Block it as \"Focus time\", 13:00 to 15:00.")
    d.do("create_event", title="Focus time", date="2025-03-04", start="13:00", end="15:00")
    d.reply("Blocked Focus time on Tuesday 13:00-15:00.")
    d.user("Cancel the vendor demo and tell Aisha... actually, just cancel it.")
    d.look("search_events", query="Vendor demo")
    d.do("cancel_event", event_id="e5")
    d.reply("Cancelled the vendor demo on Wednesday.")
    d.user("How many events do I have left on Tuesday?")
    d.look("list_events", date="2025-03-04")
    d.reply("4 events: Standup, Design review, Lunch with Chen and Focus time.", facts=["4"])
    return d


def _bank(checking: int, savings: int, brokerage: int, holdings: dict[str, int], payees: list[str]) -> dict:
    return {"customer": CUSTOMER,
            "accounts": {"checking": {"number": "CHK-2001", "balance": checking},
                         "savings": {"number": "SAV-2002", "balance": savings},
                         "brokerage": {"number": "BRK-2003", "balance": brokerage}},
            "payees": {p: {"account_number": PAYEES[p]} for p in payees}, "payments": {}, "prices": dict(PRICES),
            "holdings": dict(holdings), "transactions": [], "next_id": 0}


def _balances(d: Draft, *accounts: str) -> list[str]:
    """The balances of ``accounts`` now, as an answer would write them (distractors)."""
    return [f"{dollars(d.state['accounts'][a]['balance']):.2f}" for a in accounts]


def rent_month() -> Draft:
    d = Draft("banking", BANK_TOOLS, bank_project, Bank,
              _bank(95000, 400000, 12000, {"VTI": 4}, ["Landlord LLC", "City Power"]))
    d.user("Rent is 1,400.00 and goes to Landlord LLC from checking. Pay it, moving whatever checking is "
           "short from savings first.")
    d.look("get_balance", account="checking")
    d.do("transfer", from_account="savings", to_account="checking", amount=450.00)
    d.do("pay_bill", payee="Landlord LLC", from_account="checking", amount=1400.00)
    d.reply("Moved 450.00 from savings to checking and paid Landlord LLC 1400.00.")
    d.user("Oops, rent is actually 1,350.00. Fix the payment.")
    d.look("list_payments", status="pending")
    d.do("cancel_payment", payment_id="p1")
    d.do("pay_bill", payee="Landlord LLC", from_account="checking", amount=1350.00)
    d.reply("Cancelled the 1400.00 payment and paid 1350.00 instead.")
    d.user("What's left in checking now?")
    d.look("get_balance", account="checking")
    d.reply("Checking has 50.00 left.", facts=["50.00"], distractors=_balances(d, "savings", "brokerage"))
    return d


def rebalance() -> Draft:
    d = Draft("banking", BANK_TOOLS, bank_project, Bank, _bank(210000, 900000, 5000, {"TSLA": 10, "KO": 20}, ["FiberNet"]))
    d.user("Sell all my TSLA.")
    d.look("get_portfolio")
    d.do("sell_stock", symbol="TSLA", quantity=10)
    d.reply("Sold 10 TSLA for 1758.00.")
    d.user("With that cash, buy as many whole VTI shares as it allows.")
    d.look("get_quote", symbol="VTI")
    d.look("get_balance", account="brokerage")
    d.do("buy_stock", symbol="VTI", quantity=6)
    d.reply("Bought 6 VTI for 1591.80.")
    d.user("Wire the rest of my brokerage cash to my sister's account abroad.")
    d.reply("Sorry, I can't send wires abroad; I can only move money between your own accounts and pay registered payees.",
            decline=True)
    d.user("Fine. What's my brokerage cash now?")
    d.look("get_balance", account="brokerage")
    d.reply("Your brokerage cash is 216.20.", facts=["216.20"], distractors=_balances(d, "checking", "savings"))
    return d


CURATED: dict[str, Callable[[], Draft]] = {
    "fc-curated-filesystem-tax-receipts": tax_receipts,
    "fc-curated-filesystem-project-cleanup": project_cleanup,
    "fc-curated-messaging-spare-key": spare_key,
    "fc-curated-messaging-two-alexes": two_alexes,
    "fc-curated-calendar-dentist-shuffle": dentist_shuffle,
    "fc-curated-calendar-focus-week": focus_week,
    "fc-curated-banking-rent-month": rent_month,
    "fc-curated-banking-rebalance": rebalance,
}
#: Half of the curated tasks are held out.
CURATED_TEST = {"fc-curated-filesystem-project-cleanup", "fc-curated-messaging-two-alexes",
                "fc-curated-calendar-focus-week", "fc-curated-banking-rebalance"}
