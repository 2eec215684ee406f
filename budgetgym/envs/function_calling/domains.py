"""Every function-calling domain, by name (a task record's ``domain`` field)."""

from budgetgym.envs.function_calling.banking import DOMAIN as BANKING
from budgetgym.envs.function_calling.banking.tools import READ_ONLY as BANKING_READ_ONLY
from budgetgym.envs.function_calling.calendar import DOMAIN as CALENDAR
from budgetgym.envs.function_calling.calendar.tools import READ_ONLY as CALENDAR_READ_ONLY
from budgetgym.envs.function_calling.domain import Domain
from budgetgym.envs.function_calling.filesystem import DOMAIN as FILESYSTEM
from budgetgym.envs.function_calling.filesystem.tools import READ_ONLY as FILESYSTEM_READ_ONLY
from budgetgym.envs.function_calling.messaging import DOMAIN as MESSAGING
from budgetgym.envs.function_calling.messaging.tools import READ_ONLY as MESSAGING_READ_ONLY

DOMAINS: dict[str, Domain] = {domain.name: domain for domain in (FILESYSTEM, MESSAGING, CALENDAR, BANKING)}
#: The tools of every domain that change nothing the scoring looks at.
READ_ONLY_TOOLS = BANKING_READ_ONLY | CALENDAR_READ_ONLY | FILESYSTEM_READ_ONLY | MESSAGING_READ_ONLY
