"""A search as one self-contained HTML page: tree, fitness, roofline and timing distributions.

:mod:`~kevolve.report.data` reads what a session stored into plain records; :mod:`~kevolve.report.render`
draws them with Plotly, whose script is embedded so the page opens offline.
"""

from kevolve.report.data import ReportData, report_data
from kevolve.report.render import write_compare, write_report

__all__ = ["ReportData", "report_data", "write_compare", "write_report"]
