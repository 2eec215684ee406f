"""run_tests: the repository's test suite."""

from budgetgym.core import Tool, object_schema


def run_tests(ws) -> str:
    return ws.run_tests()


TOOL = Tool(
    name="run_tests",
    description="Run the repository's test suite (python -m pytest tests) in the sandbox and show the report.",
    parameters=object_schema({}),
    function=run_tests,
)
