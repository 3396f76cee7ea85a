"""The exceptions of the package: each names the argument at fault."""


class RuleproofError(Exception):
    """Every error this package raises on bad input or a missing engine."""


class BinaryNotFound(RuleproofError, FileNotFoundError):
    """No `ruleproof` command where the package looked (argument `binary`)."""


class KernelInputError(RuleproofError, ValueError):
    """An argument the check cannot take: an unknown rule, a dtype the precision policy cannot
    judge, a shape that contradicts another, a kernel's output of the wrong shape."""


class KernelRaised(RuleproofError, RuntimeError):
    """The kernel under test (argument `fn`) raised, forward or backward; the kernel's exception
    is chained as __cause__."""
