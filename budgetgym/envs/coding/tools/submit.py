"""submit: hand in the repository as it is; hidden tests decide."""

from budgetgym.core import Tool, object_schema


def submit(ws) -> str:
    return ws.submit()


TOOL = Tool(
    name="submit",
    description=("Hand in the repository as it is now and end the episode. The issue's tests and the rest of the "
                 "suite are then run on fresh copies of the tests."),
    parameters=object_schema({}),
    function=submit,
)
