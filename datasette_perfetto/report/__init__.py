"""The report: trace_processor's `report` RFC as views (views/), rendered as HTML, JSON, text and SQL."""
