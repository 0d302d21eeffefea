"""Old home of the closing summary; it now lives in ``course_utils.notebook`` (kept while notebooks move over)."""

from course_utils.notebook import Row, SummaryTable, last_verified
from course_utils.notebook import summary_table as table

__all__ = ["Row", "SummaryTable", "last_verified", "table"]
