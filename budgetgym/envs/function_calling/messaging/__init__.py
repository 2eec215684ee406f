"""The messaging domain: contacts, an inbox, sent messages and a trash."""

from budgetgym.envs.function_calling.domain import Domain
from budgetgym.envs.function_calling.messaging.backend import Mailbox, project
from budgetgym.envs.function_calling.messaging.generator import OWNER, generate
from budgetgym.envs.function_calling.messaging.mistakes import MISTAKES
from budgetgym.envs.function_calling.messaging.planner import plan
from budgetgym.envs.function_calling.messaging.tools import TOOLS

DOMAIN = Domain(
    name="messaging",
    intro=(
        f"You are the messaging assistant of {OWNER}. You manage their contacts and text messages "
        "only through the tools; deleted messages go to the trash."
    ),
    backend=Mailbox,
    tools=TOOLS,
    project=project,
    plan=plan,
    generate=generate,
    mistakes=MISTAKES,
)
