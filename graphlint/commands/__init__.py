"""The subcommands, one module each; :data:`COMMANDS` is the one list the command line registers.

    graphlint check     lint models against targets (the default command)
    graphlint rules     table of every installed rule
    graphlint explain   a rule's documentation
    graphlint fix       apply the findings' rewrites as verified passes
    graphlint baseline  record today's findings
    graphlint report    an offline HTML report
    graphlint config    the effective configuration
    graphlint scan      a fleet of models into a results store, its dashboard and engine-upgrade diff
"""

from __future__ import annotations

from graphlint.commands import baseline, check, config, explain, fix, report, rules, scan

COMMANDS = [check.command, rules.command, explain.command, fix.command, baseline.command, report.command,
            config.command, scan.command]
