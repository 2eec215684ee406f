"""Every function-calling domain, by name (a task record's ``domain`` field)."""

from budgetgym.envs.function_calling.banking import DOMAIN as BANKING
from budgetgym.envs.function_calling.calendar import DOMAIN as CALENDAR
from budgetgym.envs.function_calling.domain import Domain
from budgetgym.envs.function_calling.filesystem import DOMAIN as FILESYSTEM
from budgetgym.envs.function_calling.messaging import DOMAIN as MESSAGING

DOMAINS: dict[str, Domain] = {domain.name: domain for domain in (FILESYSTEM, MESSAGING, CALENDAR, BANKING)}
