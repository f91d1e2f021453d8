from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Report(_message.Message):
    __slots__ = ("noun", "view", "context", "overview", "processes_table", "tracks_table", "slices_table", "slices_histogram", "slices_timeline", "slices_inspect", "scheduling_summary", "scheduling_timeline", "scheduling_inspect", "counters_list", "counters_timeline", "counters_histogram", "counters_inspect", "not_present", "overview_diff", "processes_table_diff", "tracks_table_diff", "slices_table_diff", "scheduling_summary_diff", "counters_list_diff", "stack_samples_functions", "stack_samples_top_down", "stack_samples_bottom_up", "heap_profile_functions", "heap_profile_top_down", "heap_profile_bottom_up", "heap_dump_types", "stack_samples_functions_diff", "heap_profile_functions_diff", "heap_dump_types_diff", "stack_samples_top_down_diff", "stack_samples_bottom_up_diff", "heap_profile_top_down_diff", "heap_profile_bottom_up_diff", "dimensions_list", "dimensions_compare", "footnotes", "next_steps", "queries", "baseline")
    NOUN_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    OVERVIEW_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_TABLE_FIELD_NUMBER: _ClassVar[int]
    TRACKS_TABLE_FIELD_NUMBER: _ClassVar[int]
    SLICES_TABLE_FIELD_NUMBER: _ClassVar[int]
    SLICES_HISTOGRAM_FIELD_NUMBER: _ClassVar[int]
    SLICES_TIMELINE_FIELD_NUMBER: _ClassVar[int]
    SLICES_INSPECT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_TIMELINE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_INSPECT_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_LIST_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_TIMELINE_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_HISTOGRAM_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_INSPECT_FIELD_NUMBER: _ClassVar[int]
    NOT_PRESENT_FIELD_NUMBER: _ClassVar[int]
    OVERVIEW_DIFF_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_TABLE_DIFF_FIELD_NUMBER: _ClassVar[int]
    TRACKS_TABLE_DIFF_FIELD_NUMBER: _ClassVar[int]
    SLICES_TABLE_DIFF_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_SUMMARY_DIFF_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_LIST_DIFF_FIELD_NUMBER: _ClassVar[int]
    STACK_SAMPLES_FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    STACK_SAMPLES_TOP_DOWN_FIELD_NUMBER: _ClassVar[int]
    STACK_SAMPLES_BOTTOM_UP_FIELD_NUMBER: _ClassVar[int]
    HEAP_PROFILE_FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    HEAP_PROFILE_TOP_DOWN_FIELD_NUMBER: _ClassVar[int]
    HEAP_PROFILE_BOTTOM_UP_FIELD_NUMBER: _ClassVar[int]
    HEAP_DUMP_TYPES_FIELD_NUMBER: _ClassVar[int]
    STACK_SAMPLES_FUNCTIONS_DIFF_FIELD_NUMBER: _ClassVar[int]
    HEAP_PROFILE_FUNCTIONS_DIFF_FIELD_NUMBER: _ClassVar[int]
    HEAP_DUMP_TYPES_DIFF_FIELD_NUMBER: _ClassVar[int]
    STACK_SAMPLES_TOP_DOWN_DIFF_FIELD_NUMBER: _ClassVar[int]
    STACK_SAMPLES_BOTTOM_UP_DIFF_FIELD_NUMBER: _ClassVar[int]
    HEAP_PROFILE_TOP_DOWN_DIFF_FIELD_NUMBER: _ClassVar[int]
    HEAP_PROFILE_BOTTOM_UP_DIFF_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_LIST_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_COMPARE_FIELD_NUMBER: _ClassVar[int]
    FOOTNOTES_FIELD_NUMBER: _ClassVar[int]
    NEXT_STEPS_FIELD_NUMBER: _ClassVar[int]
    QUERIES_FIELD_NUMBER: _ClassVar[int]
    BASELINE_FIELD_NUMBER: _ClassVar[int]
    noun: str
    view: str
    context: Context
    overview: Overview
    processes_table: ProcessesTable
    tracks_table: TracksTable
    slices_table: SlicesTable
    slices_histogram: SlicesHistogram
    slices_timeline: SlicesTimeline
    slices_inspect: SlicesInspect
    scheduling_summary: SchedulingSummary
    scheduling_timeline: SchedulingTimeline
    scheduling_inspect: SchedulingInspect
    counters_list: CountersList
    counters_timeline: CountersTimeline
    counters_histogram: CountersHistogram
    counters_inspect: CountersInspect
    not_present: NotPresent
    overview_diff: OverviewDiff
    processes_table_diff: ProcessesTableDiff
    tracks_table_diff: TracksTableDiff
    slices_table_diff: SlicesTableDiff
    scheduling_summary_diff: SchedulingSummaryDiff
    counters_list_diff: CountersListDiff
    stack_samples_functions: StackFunctions
    stack_samples_top_down: CallTree
    stack_samples_bottom_up: CallTree
    heap_profile_functions: HeapFunctions
    heap_profile_top_down: CallTree
    heap_profile_bottom_up: CallTree
    heap_dump_types: HeapDumpTypes
    stack_samples_functions_diff: StackFunctionsDiff
    heap_profile_functions_diff: HeapFunctionsDiff
    heap_dump_types_diff: HeapDumpTypesDiff
    stack_samples_top_down_diff: CallTreeDiff
    stack_samples_bottom_up_diff: CallTreeDiff
    heap_profile_top_down_diff: CallTreeDiff
    heap_profile_bottom_up_diff: CallTreeDiff
    dimensions_list: DimensionsList
    dimensions_compare: DimensionsCompare
    footnotes: _containers.RepeatedCompositeFieldContainer[Footnote]
    next_steps: _containers.RepeatedCompositeFieldContainer[NextStep]
    queries: _containers.RepeatedCompositeFieldContainer[Query]
    baseline: Context
    def __init__(self, noun: _Optional[str] = ..., view: _Optional[str] = ..., context: _Optional[_Union[Context, _Mapping]] = ..., overview: _Optional[_Union[Overview, _Mapping]] = ..., processes_table: _Optional[_Union[ProcessesTable, _Mapping]] = ..., tracks_table: _Optional[_Union[TracksTable, _Mapping]] = ..., slices_table: _Optional[_Union[SlicesTable, _Mapping]] = ..., slices_histogram: _Optional[_Union[SlicesHistogram, _Mapping]] = ..., slices_timeline: _Optional[_Union[SlicesTimeline, _Mapping]] = ..., slices_inspect: _Optional[_Union[SlicesInspect, _Mapping]] = ..., scheduling_summary: _Optional[_Union[SchedulingSummary, _Mapping]] = ..., scheduling_timeline: _Optional[_Union[SchedulingTimeline, _Mapping]] = ..., scheduling_inspect: _Optional[_Union[SchedulingInspect, _Mapping]] = ..., counters_list: _Optional[_Union[CountersList, _Mapping]] = ..., counters_timeline: _Optional[_Union[CountersTimeline, _Mapping]] = ..., counters_histogram: _Optional[_Union[CountersHistogram, _Mapping]] = ..., counters_inspect: _Optional[_Union[CountersInspect, _Mapping]] = ..., not_present: _Optional[_Union[NotPresent, _Mapping]] = ..., overview_diff: _Optional[_Union[OverviewDiff, _Mapping]] = ..., processes_table_diff: _Optional[_Union[ProcessesTableDiff, _Mapping]] = ..., tracks_table_diff: _Optional[_Union[TracksTableDiff, _Mapping]] = ..., slices_table_diff: _Optional[_Union[SlicesTableDiff, _Mapping]] = ..., scheduling_summary_diff: _Optional[_Union[SchedulingSummaryDiff, _Mapping]] = ..., counters_list_diff: _Optional[_Union[CountersListDiff, _Mapping]] = ..., stack_samples_functions: _Optional[_Union[StackFunctions, _Mapping]] = ..., stack_samples_top_down: _Optional[_Union[CallTree, _Mapping]] = ..., stack_samples_bottom_up: _Optional[_Union[CallTree, _Mapping]] = ..., heap_profile_functions: _Optional[_Union[HeapFunctions, _Mapping]] = ..., heap_profile_top_down: _Optional[_Union[CallTree, _Mapping]] = ..., heap_profile_bottom_up: _Optional[_Union[CallTree, _Mapping]] = ..., heap_dump_types: _Optional[_Union[HeapDumpTypes, _Mapping]] = ..., stack_samples_functions_diff: _Optional[_Union[StackFunctionsDiff, _Mapping]] = ..., heap_profile_functions_diff: _Optional[_Union[HeapFunctionsDiff, _Mapping]] = ..., heap_dump_types_diff: _Optional[_Union[HeapDumpTypesDiff, _Mapping]] = ..., stack_samples_top_down_diff: _Optional[_Union[CallTreeDiff, _Mapping]] = ..., stack_samples_bottom_up_diff: _Optional[_Union[CallTreeDiff, _Mapping]] = ..., heap_profile_top_down_diff: _Optional[_Union[CallTreeDiff, _Mapping]] = ..., heap_profile_bottom_up_diff: _Optional[_Union[CallTreeDiff, _Mapping]] = ..., dimensions_list: _Optional[_Union[DimensionsList, _Mapping]] = ..., dimensions_compare: _Optional[_Union[DimensionsCompare, _Mapping]] = ..., footnotes: _Optional[_Iterable[_Union[Footnote, _Mapping]]] = ..., next_steps: _Optional[_Iterable[_Union[NextStep, _Mapping]]] = ..., queries: _Optional[_Iterable[_Union[Query, _Mapping]]] = ..., baseline: _Optional[_Union[Context, _Mapping]] = ...) -> None: ...

class Context(_message.Message):
    __slots__ = ("trace", "trace_start_ts", "trace_end_ts", "trace_dur", "range", "range_start_ts", "range_end_ts", "process_count", "os", "machine", "scope", "database")
    class ScopeEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TRACE_FIELD_NUMBER: _ClassVar[int]
    TRACE_START_TS_FIELD_NUMBER: _ClassVar[int]
    TRACE_END_TS_FIELD_NUMBER: _ClassVar[int]
    TRACE_DUR_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    RANGE_START_TS_FIELD_NUMBER: _ClassVar[int]
    RANGE_END_TS_FIELD_NUMBER: _ClassVar[int]
    PROCESS_COUNT_FIELD_NUMBER: _ClassVar[int]
    OS_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    DATABASE_FIELD_NUMBER: _ClassVar[int]
    trace: str
    trace_start_ts: int
    trace_end_ts: int
    trace_dur: int
    range: str
    range_start_ts: int
    range_end_ts: int
    process_count: int
    os: str
    machine: str
    scope: _containers.ScalarMap[str, str]
    database: str
    def __init__(self, trace: _Optional[str] = ..., trace_start_ts: _Optional[int] = ..., trace_end_ts: _Optional[int] = ..., trace_dur: _Optional[int] = ..., range: _Optional[str] = ..., range_start_ts: _Optional[int] = ..., range_end_ts: _Optional[int] = ..., process_count: _Optional[int] = ..., os: _Optional[str] = ..., machine: _Optional[str] = ..., scope: _Optional[_Mapping[str, str]] = ..., database: _Optional[str] = ...) -> None: ...

class Footnote(_message.Message):
    __slots__ = ("text", "url", "command")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    text: str
    url: str
    command: str
    def __init__(self, text: _Optional[str] = ..., url: _Optional[str] = ..., command: _Optional[str] = ...) -> None: ...

class NextStep(_message.Message):
    __slots__ = ("label", "url", "command")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    label: str
    url: str
    command: str
    def __init__(self, label: _Optional[str] = ..., url: _Optional[str] = ..., command: _Optional[str] = ...) -> None: ...

class Query(_message.Message):
    __slots__ = ("purpose", "sql", "params", "url")
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PURPOSE_FIELD_NUMBER: _ClassVar[int]
    SQL_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    purpose: str
    sql: str
    params: _containers.ScalarMap[str, str]
    url: str
    def __init__(self, purpose: _Optional[str] = ..., sql: _Optional[str] = ..., params: _Optional[_Mapping[str, str]] = ..., url: _Optional[str] = ...) -> None: ...

class DurationStats(_message.Message):
    __slots__ = ("count", "total", "min", "avg", "max", "p50", "p95", "p99")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    AVG_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    P50_FIELD_NUMBER: _ClassVar[int]
    P95_FIELD_NUMBER: _ClassVar[int]
    P99_FIELD_NUMBER: _ClassVar[int]
    count: int
    total: int
    min: int
    avg: int
    max: int
    p50: int
    p95: int
    p99: int
    def __init__(self, count: _Optional[int] = ..., total: _Optional[int] = ..., min: _Optional[int] = ..., avg: _Optional[int] = ..., max: _Optional[int] = ..., p50: _Optional[int] = ..., p95: _Optional[int] = ..., p99: _Optional[int] = ...) -> None: ...

class ValueStats(_message.Message):
    __slots__ = ("count", "min", "avg", "max", "p50", "p95", "p99")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    AVG_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    P50_FIELD_NUMBER: _ClassVar[int]
    P95_FIELD_NUMBER: _ClassVar[int]
    P99_FIELD_NUMBER: _ClassVar[int]
    count: int
    min: float
    avg: float
    max: float
    p50: float
    p95: float
    p99: float
    def __init__(self, count: _Optional[int] = ..., min: _Optional[float] = ..., avg: _Optional[float] = ..., max: _Optional[float] = ..., p50: _Optional[float] = ..., p95: _Optional[float] = ..., p99: _Optional[float] = ...) -> None: ...

class SliceInstance(_message.Message):
    __slots__ = ("ts", "dur", "name", "track", "thread", "tid", "process", "pid", "depth", "id", "track_id", "utid", "upid", "subtitle")
    TS_FIELD_NUMBER: _ClassVar[int]
    DUR_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TRACK_FIELD_NUMBER: _ClassVar[int]
    THREAD_FIELD_NUMBER: _ClassVar[int]
    TID_FIELD_NUMBER: _ClassVar[int]
    PROCESS_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TRACK_ID_FIELD_NUMBER: _ClassVar[int]
    UTID_FIELD_NUMBER: _ClassVar[int]
    UPID_FIELD_NUMBER: _ClassVar[int]
    SUBTITLE_FIELD_NUMBER: _ClassVar[int]
    ts: int
    dur: int
    name: str
    track: str
    thread: str
    tid: int
    process: str
    pid: int
    depth: int
    id: int
    track_id: int
    utid: int
    upid: int
    subtitle: str
    def __init__(self, ts: _Optional[int] = ..., dur: _Optional[int] = ..., name: _Optional[str] = ..., track: _Optional[str] = ..., thread: _Optional[str] = ..., tid: _Optional[int] = ..., process: _Optional[str] = ..., pid: _Optional[int] = ..., depth: _Optional[int] = ..., id: _Optional[int] = ..., track_id: _Optional[int] = ..., utid: _Optional[int] = ..., upid: _Optional[int] = ..., subtitle: _Optional[str] = ...) -> None: ...

class Named(_message.Message):
    __slots__ = ("name", "value", "subtitle")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    SUBTITLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: float
    subtitle: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[float] = ..., subtitle: _Optional[str] = ...) -> None: ...

class Overview(_message.Message):
    __slots__ = ("slices", "scheduling", "counters", "processes", "absent", "stack_samples", "heap_profile", "heap_dump", "by_dimension")
    SLICES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_FIELD_NUMBER: _ClassVar[int]
    ABSENT_FIELD_NUMBER: _ClassVar[int]
    STACK_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    HEAP_PROFILE_FIELD_NUMBER: _ClassVar[int]
    HEAP_DUMP_FIELD_NUMBER: _ClassVar[int]
    BY_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    slices: SlicesTable
    scheduling: SchedulingSummary
    counters: CountersList
    processes: ProcessesTable
    absent: _containers.RepeatedCompositeFieldContainer[NotPresent]
    stack_samples: StackFunctions
    heap_profile: HeapFunctions
    heap_dump: HeapDumpTypes
    by_dimension: _containers.RepeatedCompositeFieldContainer[DimensionsCompare]
    def __init__(self, slices: _Optional[_Union[SlicesTable, _Mapping]] = ..., scheduling: _Optional[_Union[SchedulingSummary, _Mapping]] = ..., counters: _Optional[_Union[CountersList, _Mapping]] = ..., processes: _Optional[_Union[ProcessesTable, _Mapping]] = ..., absent: _Optional[_Iterable[_Union[NotPresent, _Mapping]]] = ..., stack_samples: _Optional[_Union[StackFunctions, _Mapping]] = ..., heap_profile: _Optional[_Union[HeapFunctions, _Mapping]] = ..., heap_dump: _Optional[_Union[HeapDumpTypes, _Mapping]] = ..., by_dimension: _Optional[_Iterable[_Union[DimensionsCompare, _Mapping]]] = ...) -> None: ...

class NotPresent(_message.Message):
    __slots__ = ("noun", "reason")
    NOUN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    noun: str
    reason: str
    def __init__(self, noun: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ProcessesTable(_message.Message):
    __slots__ = ("rows", "total_rows", "top_threads_by", "group_by")
    class Row(_message.Message):
        __slots__ = ("upid", "pid", "name", "thread_count", "cpu_time", "percent_of_trace", "slice_count", "top_threads", "subtitle", "group_value", "dims")
        UPID_FIELD_NUMBER: _ClassVar[int]
        PID_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        THREAD_COUNT_FIELD_NUMBER: _ClassVar[int]
        CPU_TIME_FIELD_NUMBER: _ClassVar[int]
        PERCENT_OF_TRACE_FIELD_NUMBER: _ClassVar[int]
        SLICE_COUNT_FIELD_NUMBER: _ClassVar[int]
        TOP_THREADS_FIELD_NUMBER: _ClassVar[int]
        SUBTITLE_FIELD_NUMBER: _ClassVar[int]
        GROUP_VALUE_FIELD_NUMBER: _ClassVar[int]
        DIMS_FIELD_NUMBER: _ClassVar[int]
        upid: int
        pid: int
        name: str
        thread_count: int
        cpu_time: int
        percent_of_trace: float
        slice_count: int
        top_threads: _containers.RepeatedCompositeFieldContainer[Named]
        subtitle: str
        group_value: str
        dims: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, upid: _Optional[int] = ..., pid: _Optional[int] = ..., name: _Optional[str] = ..., thread_count: _Optional[int] = ..., cpu_time: _Optional[int] = ..., percent_of_trace: _Optional[float] = ..., slice_count: _Optional[int] = ..., top_threads: _Optional[_Iterable[_Union[Named, _Mapping]]] = ..., subtitle: _Optional[str] = ..., group_value: _Optional[str] = ..., dims: _Optional[_Iterable[str]] = ...) -> None: ...
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    TOP_THREADS_BY_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[ProcessesTable.Row]
    total_rows: int
    top_threads_by: str
    group_by: str
    def __init__(self, rows: _Optional[_Iterable[_Union[ProcessesTable.Row, _Mapping]]] = ..., total_rows: _Optional[int] = ..., top_threads_by: _Optional[str] = ..., group_by: _Optional[str] = ...) -> None: ...

class TracksTable(_message.Message):
    __slots__ = ("rows", "total_rows", "group_by")
    class Row(_message.Message):
        __slots__ = ("id", "name", "type", "event_type", "event_count", "process", "pid", "thread", "tid", "cpu", "subtitle", "group_value", "track_count")
        ID_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        TYPE_FIELD_NUMBER: _ClassVar[int]
        EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
        EVENT_COUNT_FIELD_NUMBER: _ClassVar[int]
        PROCESS_FIELD_NUMBER: _ClassVar[int]
        PID_FIELD_NUMBER: _ClassVar[int]
        THREAD_FIELD_NUMBER: _ClassVar[int]
        TID_FIELD_NUMBER: _ClassVar[int]
        CPU_FIELD_NUMBER: _ClassVar[int]
        SUBTITLE_FIELD_NUMBER: _ClassVar[int]
        GROUP_VALUE_FIELD_NUMBER: _ClassVar[int]
        TRACK_COUNT_FIELD_NUMBER: _ClassVar[int]
        id: int
        name: str
        type: str
        event_type: str
        event_count: int
        process: str
        pid: int
        thread: str
        tid: int
        cpu: int
        subtitle: str
        group_value: str
        track_count: int
        def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., type: _Optional[str] = ..., event_type: _Optional[str] = ..., event_count: _Optional[int] = ..., process: _Optional[str] = ..., pid: _Optional[int] = ..., thread: _Optional[str] = ..., tid: _Optional[int] = ..., cpu: _Optional[int] = ..., subtitle: _Optional[str] = ..., group_value: _Optional[str] = ..., track_count: _Optional[int] = ...) -> None: ...
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[TracksTable.Row]
    total_rows: int
    group_by: str
    def __init__(self, rows: _Optional[_Iterable[_Union[TracksTable.Row, _Mapping]]] = ..., total_rows: _Optional[int] = ..., group_by: _Optional[str] = ...) -> None: ...

class SlicesTable(_message.Message):
    __slots__ = ("rows", "total_rows", "total_slices", "slice_time", "group_by")
    class Row(_message.Message):
        __slots__ = ("name", "count", "total_dur", "percent_of_trace", "max_dur", "max_instance", "stats", "self_dur", "percent_of_slice_time", "group_value", "group_label")
        NAME_FIELD_NUMBER: _ClassVar[int]
        COUNT_FIELD_NUMBER: _ClassVar[int]
        TOTAL_DUR_FIELD_NUMBER: _ClassVar[int]
        PERCENT_OF_TRACE_FIELD_NUMBER: _ClassVar[int]
        MAX_DUR_FIELD_NUMBER: _ClassVar[int]
        MAX_INSTANCE_FIELD_NUMBER: _ClassVar[int]
        STATS_FIELD_NUMBER: _ClassVar[int]
        SELF_DUR_FIELD_NUMBER: _ClassVar[int]
        PERCENT_OF_SLICE_TIME_FIELD_NUMBER: _ClassVar[int]
        GROUP_VALUE_FIELD_NUMBER: _ClassVar[int]
        GROUP_LABEL_FIELD_NUMBER: _ClassVar[int]
        name: str
        count: int
        total_dur: int
        percent_of_trace: float
        max_dur: int
        max_instance: SliceInstance
        stats: DurationStats
        self_dur: int
        percent_of_slice_time: float
        group_value: str
        group_label: str
        def __init__(self, name: _Optional[str] = ..., count: _Optional[int] = ..., total_dur: _Optional[int] = ..., percent_of_trace: _Optional[float] = ..., max_dur: _Optional[int] = ..., max_instance: _Optional[_Union[SliceInstance, _Mapping]] = ..., stats: _Optional[_Union[DurationStats, _Mapping]] = ..., self_dur: _Optional[int] = ..., percent_of_slice_time: _Optional[float] = ..., group_value: _Optional[str] = ..., group_label: _Optional[str] = ...) -> None: ...
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SLICES_FIELD_NUMBER: _ClassVar[int]
    SLICE_TIME_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[SlicesTable.Row]
    total_rows: int
    total_slices: int
    slice_time: int
    group_by: str
    def __init__(self, rows: _Optional[_Iterable[_Union[SlicesTable.Row, _Mapping]]] = ..., total_rows: _Optional[int] = ..., total_slices: _Optional[int] = ..., slice_time: _Optional[int] = ..., group_by: _Optional[str] = ...) -> None: ...

class HistogramBucket(_message.Message):
    __slots__ = ("low", "high", "count")
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    low: float
    high: float
    count: int
    def __init__(self, low: _Optional[float] = ..., high: _Optional[float] = ..., count: _Optional[int] = ...) -> None: ...

class SlicesHistogram(_message.Message):
    __slots__ = ("name", "scale", "buckets", "stats", "measure", "group_by", "groups", "group_percentiles_left_out")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCALE_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    MEASURE_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    GROUP_PERCENTILES_LEFT_OUT_FIELD_NUMBER: _ClassVar[int]
    name: str
    scale: str
    buckets: _containers.RepeatedCompositeFieldContainer[HistogramBucket]
    stats: DurationStats
    measure: str
    group_by: str
    groups: _containers.RepeatedCompositeFieldContainer[GroupStats]
    group_percentiles_left_out: bool
    def __init__(self, name: _Optional[str] = ..., scale: _Optional[str] = ..., buckets: _Optional[_Iterable[_Union[HistogramBucket, _Mapping]]] = ..., stats: _Optional[_Union[DurationStats, _Mapping]] = ..., measure: _Optional[str] = ..., group_by: _Optional[str] = ..., groups: _Optional[_Iterable[_Union[GroupStats, _Mapping]]] = ..., group_percentiles_left_out: _Optional[bool] = ...) -> None: ...

class GroupStats(_message.Message):
    __slots__ = ("value", "label", "stats")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    value: str
    label: str
    stats: DurationStats
    def __init__(self, value: _Optional[str] = ..., label: _Optional[str] = ..., stats: _Optional[_Union[DurationStats, _Mapping]] = ...) -> None: ...

class TimelineBucket(_message.Message):
    __slots__ = ("start_ts", "end_ts", "value", "count", "total_dur", "dominant", "min", "max", "has_value")
    START_TS_FIELD_NUMBER: _ClassVar[int]
    END_TS_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_DUR_FIELD_NUMBER: _ClassVar[int]
    DOMINANT_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    HAS_VALUE_FIELD_NUMBER: _ClassVar[int]
    start_ts: int
    end_ts: int
    value: float
    count: int
    total_dur: int
    dominant: _containers.RepeatedCompositeFieldContainer[Named]
    min: float
    max: float
    has_value: bool
    def __init__(self, start_ts: _Optional[int] = ..., end_ts: _Optional[int] = ..., value: _Optional[float] = ..., count: _Optional[int] = ..., total_dur: _Optional[int] = ..., dominant: _Optional[_Iterable[_Union[Named, _Mapping]]] = ..., min: _Optional[float] = ..., max: _Optional[float] = ..., has_value: _Optional[bool] = ...) -> None: ...

class SlicesTimeline(_message.Message):
    __slots__ = ("name", "bucket_dur", "buckets")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BUCKET_DUR_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    name: str
    bucket_dur: int
    buckets: _containers.RepeatedCompositeFieldContainer[TimelineBucket]
    def __init__(self, name: _Optional[str] = ..., bucket_dur: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[TimelineBucket, _Mapping]]] = ...) -> None: ...

class Arg(_message.Message):
    __slots__ = ("key", "value", "type")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    type: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., type: _Optional[str] = ...) -> None: ...

class SlicesInspect(_message.Message):
    __slots__ = ("name", "stats", "instances", "matched", "slice", "self_dur", "args", "ancestors", "children")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    INSTANCES_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    SLICE_FIELD_NUMBER: _ClassVar[int]
    SELF_DUR_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    ANCESTORS_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    name: str
    stats: DurationStats
    instances: _containers.RepeatedCompositeFieldContainer[SliceInstance]
    matched: int
    slice: SliceInstance
    self_dur: int
    args: _containers.RepeatedCompositeFieldContainer[Arg]
    ancestors: _containers.RepeatedCompositeFieldContainer[SliceInstance]
    children: _containers.RepeatedCompositeFieldContainer[SliceInstance]
    def __init__(self, name: _Optional[str] = ..., stats: _Optional[_Union[DurationStats, _Mapping]] = ..., instances: _Optional[_Iterable[_Union[SliceInstance, _Mapping]]] = ..., matched: _Optional[int] = ..., slice: _Optional[_Union[SliceInstance, _Mapping]] = ..., self_dur: _Optional[int] = ..., args: _Optional[_Iterable[_Union[Arg, _Mapping]]] = ..., ancestors: _Optional[_Iterable[_Union[SliceInstance, _Mapping]]] = ..., children: _Optional[_Iterable[_Union[SliceInstance, _Mapping]]] = ...) -> None: ...

class SchedulingSummary(_message.Message):
    __slots__ = ("group_by", "rows", "total_rows", "cpu_count")
    class Row(_message.Message):
        __slots__ = ("name", "tid", "pid", "process", "cpu_time", "runnable", "sleeping", "percent_of_trace", "subtitle", "group_value", "group_label", "dims")
        NAME_FIELD_NUMBER: _ClassVar[int]
        TID_FIELD_NUMBER: _ClassVar[int]
        PID_FIELD_NUMBER: _ClassVar[int]
        PROCESS_FIELD_NUMBER: _ClassVar[int]
        CPU_TIME_FIELD_NUMBER: _ClassVar[int]
        RUNNABLE_FIELD_NUMBER: _ClassVar[int]
        SLEEPING_FIELD_NUMBER: _ClassVar[int]
        PERCENT_OF_TRACE_FIELD_NUMBER: _ClassVar[int]
        SUBTITLE_FIELD_NUMBER: _ClassVar[int]
        GROUP_VALUE_FIELD_NUMBER: _ClassVar[int]
        GROUP_LABEL_FIELD_NUMBER: _ClassVar[int]
        DIMS_FIELD_NUMBER: _ClassVar[int]
        name: str
        tid: int
        pid: int
        process: str
        cpu_time: int
        runnable: int
        sleeping: int
        percent_of_trace: float
        subtitle: str
        group_value: str
        group_label: str
        dims: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, name: _Optional[str] = ..., tid: _Optional[int] = ..., pid: _Optional[int] = ..., process: _Optional[str] = ..., cpu_time: _Optional[int] = ..., runnable: _Optional[int] = ..., sleeping: _Optional[int] = ..., percent_of_trace: _Optional[float] = ..., subtitle: _Optional[str] = ..., group_value: _Optional[str] = ..., group_label: _Optional[str] = ..., dims: _Optional[_Iterable[str]] = ...) -> None: ...
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    CPU_COUNT_FIELD_NUMBER: _ClassVar[int]
    group_by: str
    rows: _containers.RepeatedCompositeFieldContainer[SchedulingSummary.Row]
    total_rows: int
    cpu_count: int
    def __init__(self, group_by: _Optional[str] = ..., rows: _Optional[_Iterable[_Union[SchedulingSummary.Row, _Mapping]]] = ..., total_rows: _Optional[int] = ..., cpu_count: _Optional[int] = ...) -> None: ...

class SchedulingTimeline(_message.Message):
    __slots__ = ("bucket_dur", "cpu_count", "buckets")
    BUCKET_DUR_FIELD_NUMBER: _ClassVar[int]
    CPU_COUNT_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    bucket_dur: int
    cpu_count: int
    buckets: _containers.RepeatedCompositeFieldContainer[TimelineBucket]
    def __init__(self, bucket_dur: _Optional[int] = ..., cpu_count: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[TimelineBucket, _Mapping]]] = ...) -> None: ...

class SchedulingInspect(_message.Message):
    __slots__ = ("thread", "tid", "process", "pid", "ts", "state", "state_ts", "state_dur", "cpu", "end_state", "waker_thread", "waker_tid", "wakeup_ts", "wakeup_latency", "blocked_function", "found", "subtitle")
    THREAD_FIELD_NUMBER: _ClassVar[int]
    TID_FIELD_NUMBER: _ClassVar[int]
    PROCESS_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    TS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STATE_TS_FIELD_NUMBER: _ClassVar[int]
    STATE_DUR_FIELD_NUMBER: _ClassVar[int]
    CPU_FIELD_NUMBER: _ClassVar[int]
    END_STATE_FIELD_NUMBER: _ClassVar[int]
    WAKER_THREAD_FIELD_NUMBER: _ClassVar[int]
    WAKER_TID_FIELD_NUMBER: _ClassVar[int]
    WAKEUP_TS_FIELD_NUMBER: _ClassVar[int]
    WAKEUP_LATENCY_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    FOUND_FIELD_NUMBER: _ClassVar[int]
    SUBTITLE_FIELD_NUMBER: _ClassVar[int]
    thread: str
    tid: int
    process: str
    pid: int
    ts: int
    state: str
    state_ts: int
    state_dur: int
    cpu: int
    end_state: str
    waker_thread: str
    waker_tid: int
    wakeup_ts: int
    wakeup_latency: int
    blocked_function: str
    found: bool
    subtitle: str
    def __init__(self, thread: _Optional[str] = ..., tid: _Optional[int] = ..., process: _Optional[str] = ..., pid: _Optional[int] = ..., ts: _Optional[int] = ..., state: _Optional[str] = ..., state_ts: _Optional[int] = ..., state_dur: _Optional[int] = ..., cpu: _Optional[int] = ..., end_state: _Optional[str] = ..., waker_thread: _Optional[str] = ..., waker_tid: _Optional[int] = ..., wakeup_ts: _Optional[int] = ..., wakeup_latency: _Optional[int] = ..., blocked_function: _Optional[str] = ..., found: _Optional[bool] = ..., subtitle: _Optional[str] = ...) -> None: ...

class CountersList(_message.Message):
    __slots__ = ("rows", "total_rows", "group_by")
    class Row(_message.Message):
        __slots__ = ("name", "track_type", "scope", "count", "min", "avg", "max", "track_id", "unit", "process", "pid", "thread", "tid", "cpu", "gpu", "monotonic", "rate", "variation", "subtitle", "group_value", "group_label")
        NAME_FIELD_NUMBER: _ClassVar[int]
        TRACK_TYPE_FIELD_NUMBER: _ClassVar[int]
        SCOPE_FIELD_NUMBER: _ClassVar[int]
        COUNT_FIELD_NUMBER: _ClassVar[int]
        MIN_FIELD_NUMBER: _ClassVar[int]
        AVG_FIELD_NUMBER: _ClassVar[int]
        MAX_FIELD_NUMBER: _ClassVar[int]
        TRACK_ID_FIELD_NUMBER: _ClassVar[int]
        UNIT_FIELD_NUMBER: _ClassVar[int]
        PROCESS_FIELD_NUMBER: _ClassVar[int]
        PID_FIELD_NUMBER: _ClassVar[int]
        THREAD_FIELD_NUMBER: _ClassVar[int]
        TID_FIELD_NUMBER: _ClassVar[int]
        CPU_FIELD_NUMBER: _ClassVar[int]
        GPU_FIELD_NUMBER: _ClassVar[int]
        MONOTONIC_FIELD_NUMBER: _ClassVar[int]
        RATE_FIELD_NUMBER: _ClassVar[int]
        VARIATION_FIELD_NUMBER: _ClassVar[int]
        SUBTITLE_FIELD_NUMBER: _ClassVar[int]
        GROUP_VALUE_FIELD_NUMBER: _ClassVar[int]
        GROUP_LABEL_FIELD_NUMBER: _ClassVar[int]
        name: str
        track_type: str
        scope: str
        count: int
        min: float
        avg: float
        max: float
        track_id: int
        unit: str
        process: str
        pid: int
        thread: str
        tid: int
        cpu: int
        gpu: int
        monotonic: bool
        rate: float
        variation: float
        subtitle: str
        group_value: str
        group_label: str
        def __init__(self, name: _Optional[str] = ..., track_type: _Optional[str] = ..., scope: _Optional[str] = ..., count: _Optional[int] = ..., min: _Optional[float] = ..., avg: _Optional[float] = ..., max: _Optional[float] = ..., track_id: _Optional[int] = ..., unit: _Optional[str] = ..., process: _Optional[str] = ..., pid: _Optional[int] = ..., thread: _Optional[str] = ..., tid: _Optional[int] = ..., cpu: _Optional[int] = ..., gpu: _Optional[int] = ..., monotonic: _Optional[bool] = ..., rate: _Optional[float] = ..., variation: _Optional[float] = ..., subtitle: _Optional[str] = ..., group_value: _Optional[str] = ..., group_label: _Optional[str] = ...) -> None: ...
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[CountersList.Row]
    total_rows: int
    group_by: str
    def __init__(self, rows: _Optional[_Iterable[_Union[CountersList.Row, _Mapping]]] = ..., total_rows: _Optional[int] = ..., group_by: _Optional[str] = ...) -> None: ...

class CountersTimeline(_message.Message):
    __slots__ = ("name", "bucket_dur", "buckets", "tracks")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BUCKET_DUR_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    TRACKS_FIELD_NUMBER: _ClassVar[int]
    name: str
    bucket_dur: int
    buckets: _containers.RepeatedCompositeFieldContainer[TimelineBucket]
    tracks: _containers.RepeatedCompositeFieldContainer[CountersList.Row]
    def __init__(self, name: _Optional[str] = ..., bucket_dur: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[TimelineBucket, _Mapping]]] = ..., tracks: _Optional[_Iterable[_Union[CountersList.Row, _Mapping]]] = ...) -> None: ...

class CountersHistogram(_message.Message):
    __slots__ = ("name", "scale", "buckets", "stats", "tracks")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCALE_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    TRACKS_FIELD_NUMBER: _ClassVar[int]
    name: str
    scale: str
    buckets: _containers.RepeatedCompositeFieldContainer[HistogramBucket]
    stats: ValueStats
    tracks: _containers.RepeatedCompositeFieldContainer[CountersList.Row]
    def __init__(self, name: _Optional[str] = ..., scale: _Optional[str] = ..., buckets: _Optional[_Iterable[_Union[HistogramBucket, _Mapping]]] = ..., stats: _Optional[_Union[ValueStats, _Mapping]] = ..., tracks: _Optional[_Iterable[_Union[CountersList.Row, _Mapping]]] = ...) -> None: ...

class CountersInspect(_message.Message):
    __slots__ = ("name", "ts", "has_value_at_ts", "value_at_ts", "stats", "delta", "first_ts", "last_ts", "tracks", "samples", "value_ts", "unit", "percentiles_left_out")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TS_FIELD_NUMBER: _ClassVar[int]
    HAS_VALUE_AT_TS_FIELD_NUMBER: _ClassVar[int]
    VALUE_AT_TS_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    FIRST_TS_FIELD_NUMBER: _ClassVar[int]
    LAST_TS_FIELD_NUMBER: _ClassVar[int]
    TRACKS_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    VALUE_TS_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    PERCENTILES_LEFT_OUT_FIELD_NUMBER: _ClassVar[int]
    name: str
    ts: int
    has_value_at_ts: bool
    value_at_ts: float
    stats: ValueStats
    delta: float
    first_ts: int
    last_ts: int
    tracks: _containers.RepeatedCompositeFieldContainer[CounterTrackValue]
    samples: _containers.RepeatedCompositeFieldContainer[CounterSample]
    value_ts: int
    unit: str
    percentiles_left_out: bool
    def __init__(self, name: _Optional[str] = ..., ts: _Optional[int] = ..., has_value_at_ts: _Optional[bool] = ..., value_at_ts: _Optional[float] = ..., stats: _Optional[_Union[ValueStats, _Mapping]] = ..., delta: _Optional[float] = ..., first_ts: _Optional[int] = ..., last_ts: _Optional[int] = ..., tracks: _Optional[_Iterable[_Union[CounterTrackValue, _Mapping]]] = ..., samples: _Optional[_Iterable[_Union[CounterSample, _Mapping]]] = ..., value_ts: _Optional[int] = ..., unit: _Optional[str] = ..., percentiles_left_out: _Optional[bool] = ...) -> None: ...

class CounterTrackValue(_message.Message):
    __slots__ = ("track", "has_value_at_ts", "value_at_ts", "value_ts", "delta", "first_ts", "last_ts")
    TRACK_FIELD_NUMBER: _ClassVar[int]
    HAS_VALUE_AT_TS_FIELD_NUMBER: _ClassVar[int]
    VALUE_AT_TS_FIELD_NUMBER: _ClassVar[int]
    VALUE_TS_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    FIRST_TS_FIELD_NUMBER: _ClassVar[int]
    LAST_TS_FIELD_NUMBER: _ClassVar[int]
    track: CountersList.Row
    has_value_at_ts: bool
    value_at_ts: float
    value_ts: int
    delta: float
    first_ts: int
    last_ts: int
    def __init__(self, track: _Optional[_Union[CountersList.Row, _Mapping]] = ..., has_value_at_ts: _Optional[bool] = ..., value_at_ts: _Optional[float] = ..., value_ts: _Optional[int] = ..., delta: _Optional[float] = ..., first_ts: _Optional[int] = ..., last_ts: _Optional[int] = ...) -> None: ...

class CounterSample(_message.Message):
    __slots__ = ("ts", "value")
    TS_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    ts: int
    value: float
    def __init__(self, ts: _Optional[int] = ..., value: _Optional[float] = ...) -> None: ...

class DiffSummary(_message.Message):
    __slots__ = ("sort", "sort_column", "total_rows", "added", "removed", "changed", "unchanged", "baseline_total_rows", "target_total_rows", "baseline_joined_rows", "target_joined_rows")
    SORT_FIELD_NUMBER: _ClassVar[int]
    SORT_COLUMN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    BASELINE_TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    TARGET_TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    BASELINE_JOINED_ROWS_FIELD_NUMBER: _ClassVar[int]
    TARGET_JOINED_ROWS_FIELD_NUMBER: _ClassVar[int]
    sort: str
    sort_column: str
    total_rows: int
    added: int
    removed: int
    changed: int
    unchanged: int
    baseline_total_rows: int
    target_total_rows: int
    baseline_joined_rows: int
    target_joined_rows: int
    def __init__(self, sort: _Optional[str] = ..., sort_column: _Optional[str] = ..., total_rows: _Optional[int] = ..., added: _Optional[int] = ..., removed: _Optional[int] = ..., changed: _Optional[int] = ..., unchanged: _Optional[int] = ..., baseline_total_rows: _Optional[int] = ..., target_total_rows: _Optional[int] = ..., baseline_joined_rows: _Optional[int] = ..., target_joined_rows: _Optional[int] = ...) -> None: ...

class SlicesTableDiff(_message.Message):
    __slots__ = ("summary", "rows", "baseline_total_slices", "target_total_slices")
    class Row(_message.Message):
        __slots__ = ("name", "change", "baseline", "target", "count_delta", "total_dur_delta", "percent_of_trace_delta", "max_dur_delta", "avg_dur_delta", "self_dur_delta", "percent_of_slice_time_delta", "group_label")
        NAME_FIELD_NUMBER: _ClassVar[int]
        CHANGE_FIELD_NUMBER: _ClassVar[int]
        BASELINE_FIELD_NUMBER: _ClassVar[int]
        TARGET_FIELD_NUMBER: _ClassVar[int]
        COUNT_DELTA_FIELD_NUMBER: _ClassVar[int]
        TOTAL_DUR_DELTA_FIELD_NUMBER: _ClassVar[int]
        PERCENT_OF_TRACE_DELTA_FIELD_NUMBER: _ClassVar[int]
        MAX_DUR_DELTA_FIELD_NUMBER: _ClassVar[int]
        AVG_DUR_DELTA_FIELD_NUMBER: _ClassVar[int]
        SELF_DUR_DELTA_FIELD_NUMBER: _ClassVar[int]
        PERCENT_OF_SLICE_TIME_DELTA_FIELD_NUMBER: _ClassVar[int]
        GROUP_LABEL_FIELD_NUMBER: _ClassVar[int]
        name: str
        change: str
        baseline: SlicesTable.Row
        target: SlicesTable.Row
        count_delta: int
        total_dur_delta: int
        percent_of_trace_delta: float
        max_dur_delta: int
        avg_dur_delta: int
        self_dur_delta: int
        percent_of_slice_time_delta: float
        group_label: str
        def __init__(self, name: _Optional[str] = ..., change: _Optional[str] = ..., baseline: _Optional[_Union[SlicesTable.Row, _Mapping]] = ..., target: _Optional[_Union[SlicesTable.Row, _Mapping]] = ..., count_delta: _Optional[int] = ..., total_dur_delta: _Optional[int] = ..., percent_of_trace_delta: _Optional[float] = ..., max_dur_delta: _Optional[int] = ..., avg_dur_delta: _Optional[int] = ..., self_dur_delta: _Optional[int] = ..., percent_of_slice_time_delta: _Optional[float] = ..., group_label: _Optional[str] = ...) -> None: ...
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    BASELINE_TOTAL_SLICES_FIELD_NUMBER: _ClassVar[int]
    TARGET_TOTAL_SLICES_FIELD_NUMBER: _ClassVar[int]
    summary: DiffSummary
    rows: _containers.RepeatedCompositeFieldContainer[SlicesTableDiff.Row]
    baseline_total_slices: int
    target_total_slices: int
    def __init__(self, summary: _Optional[_Union[DiffSummary, _Mapping]] = ..., rows: _Optional[_Iterable[_Union[SlicesTableDiff.Row, _Mapping]]] = ..., baseline_total_slices: _Optional[int] = ..., target_total_slices: _Optional[int] = ...) -> None: ...

class ProcessesTableDiff(_message.Message):
    __slots__ = ("summary", "rows", "top_threads_by")
    class Row(_message.Message):
        __slots__ = ("name", "change", "baseline", "target", "baseline_rows", "target_rows", "thread_count_delta", "cpu_time_delta", "percent_of_trace_delta", "slice_count_delta", "subtitle")
        NAME_FIELD_NUMBER: _ClassVar[int]
        CHANGE_FIELD_NUMBER: _ClassVar[int]
        BASELINE_FIELD_NUMBER: _ClassVar[int]
        TARGET_FIELD_NUMBER: _ClassVar[int]
        BASELINE_ROWS_FIELD_NUMBER: _ClassVar[int]
        TARGET_ROWS_FIELD_NUMBER: _ClassVar[int]
        THREAD_COUNT_DELTA_FIELD_NUMBER: _ClassVar[int]
        CPU_TIME_DELTA_FIELD_NUMBER: _ClassVar[int]
        PERCENT_OF_TRACE_DELTA_FIELD_NUMBER: _ClassVar[int]
        SLICE_COUNT_DELTA_FIELD_NUMBER: _ClassVar[int]
        SUBTITLE_FIELD_NUMBER: _ClassVar[int]
        name: str
        change: str
        baseline: ProcessesTable.Row
        target: ProcessesTable.Row
        baseline_rows: int
        target_rows: int
        thread_count_delta: int
        cpu_time_delta: int
        percent_of_trace_delta: float
        slice_count_delta: int
        subtitle: str
        def __init__(self, name: _Optional[str] = ..., change: _Optional[str] = ..., baseline: _Optional[_Union[ProcessesTable.Row, _Mapping]] = ..., target: _Optional[_Union[ProcessesTable.Row, _Mapping]] = ..., baseline_rows: _Optional[int] = ..., target_rows: _Optional[int] = ..., thread_count_delta: _Optional[int] = ..., cpu_time_delta: _Optional[int] = ..., percent_of_trace_delta: _Optional[float] = ..., slice_count_delta: _Optional[int] = ..., subtitle: _Optional[str] = ...) -> None: ...
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TOP_THREADS_BY_FIELD_NUMBER: _ClassVar[int]
    summary: DiffSummary
    rows: _containers.RepeatedCompositeFieldContainer[ProcessesTableDiff.Row]
    top_threads_by: str
    def __init__(self, summary: _Optional[_Union[DiffSummary, _Mapping]] = ..., rows: _Optional[_Iterable[_Union[ProcessesTableDiff.Row, _Mapping]]] = ..., top_threads_by: _Optional[str] = ...) -> None: ...

class SchedulingSummaryDiff(_message.Message):
    __slots__ = ("summary", "rows", "group_by", "baseline_cpu_count", "target_cpu_count")
    class Row(_message.Message):
        __slots__ = ("name", "process", "change", "baseline", "target", "baseline_rows", "target_rows", "cpu_time_delta", "runnable_delta", "sleeping_delta", "percent_of_trace_delta", "subtitle")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PROCESS_FIELD_NUMBER: _ClassVar[int]
        CHANGE_FIELD_NUMBER: _ClassVar[int]
        BASELINE_FIELD_NUMBER: _ClassVar[int]
        TARGET_FIELD_NUMBER: _ClassVar[int]
        BASELINE_ROWS_FIELD_NUMBER: _ClassVar[int]
        TARGET_ROWS_FIELD_NUMBER: _ClassVar[int]
        CPU_TIME_DELTA_FIELD_NUMBER: _ClassVar[int]
        RUNNABLE_DELTA_FIELD_NUMBER: _ClassVar[int]
        SLEEPING_DELTA_FIELD_NUMBER: _ClassVar[int]
        PERCENT_OF_TRACE_DELTA_FIELD_NUMBER: _ClassVar[int]
        SUBTITLE_FIELD_NUMBER: _ClassVar[int]
        name: str
        process: str
        change: str
        baseline: SchedulingSummary.Row
        target: SchedulingSummary.Row
        baseline_rows: int
        target_rows: int
        cpu_time_delta: int
        runnable_delta: int
        sleeping_delta: int
        percent_of_trace_delta: float
        subtitle: str
        def __init__(self, name: _Optional[str] = ..., process: _Optional[str] = ..., change: _Optional[str] = ..., baseline: _Optional[_Union[SchedulingSummary.Row, _Mapping]] = ..., target: _Optional[_Union[SchedulingSummary.Row, _Mapping]] = ..., baseline_rows: _Optional[int] = ..., target_rows: _Optional[int] = ..., cpu_time_delta: _Optional[int] = ..., runnable_delta: _Optional[int] = ..., sleeping_delta: _Optional[int] = ..., percent_of_trace_delta: _Optional[float] = ..., subtitle: _Optional[str] = ...) -> None: ...
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    BASELINE_CPU_COUNT_FIELD_NUMBER: _ClassVar[int]
    TARGET_CPU_COUNT_FIELD_NUMBER: _ClassVar[int]
    summary: DiffSummary
    rows: _containers.RepeatedCompositeFieldContainer[SchedulingSummaryDiff.Row]
    group_by: str
    baseline_cpu_count: int
    target_cpu_count: int
    def __init__(self, summary: _Optional[_Union[DiffSummary, _Mapping]] = ..., rows: _Optional[_Iterable[_Union[SchedulingSummaryDiff.Row, _Mapping]]] = ..., group_by: _Optional[str] = ..., baseline_cpu_count: _Optional[int] = ..., target_cpu_count: _Optional[int] = ...) -> None: ...

class TracksTableDiff(_message.Message):
    __slots__ = ("summary", "rows")
    class Row(_message.Message):
        __slots__ = ("name", "type", "owner", "change", "baseline", "target", "baseline_rows", "target_rows", "event_count_delta", "subtitle")
        NAME_FIELD_NUMBER: _ClassVar[int]
        TYPE_FIELD_NUMBER: _ClassVar[int]
        OWNER_FIELD_NUMBER: _ClassVar[int]
        CHANGE_FIELD_NUMBER: _ClassVar[int]
        BASELINE_FIELD_NUMBER: _ClassVar[int]
        TARGET_FIELD_NUMBER: _ClassVar[int]
        BASELINE_ROWS_FIELD_NUMBER: _ClassVar[int]
        TARGET_ROWS_FIELD_NUMBER: _ClassVar[int]
        EVENT_COUNT_DELTA_FIELD_NUMBER: _ClassVar[int]
        SUBTITLE_FIELD_NUMBER: _ClassVar[int]
        name: str
        type: str
        owner: str
        change: str
        baseline: TracksTable.Row
        target: TracksTable.Row
        baseline_rows: int
        target_rows: int
        event_count_delta: int
        subtitle: str
        def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., owner: _Optional[str] = ..., change: _Optional[str] = ..., baseline: _Optional[_Union[TracksTable.Row, _Mapping]] = ..., target: _Optional[_Union[TracksTable.Row, _Mapping]] = ..., baseline_rows: _Optional[int] = ..., target_rows: _Optional[int] = ..., event_count_delta: _Optional[int] = ..., subtitle: _Optional[str] = ...) -> None: ...
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    summary: DiffSummary
    rows: _containers.RepeatedCompositeFieldContainer[TracksTableDiff.Row]
    def __init__(self, summary: _Optional[_Union[DiffSummary, _Mapping]] = ..., rows: _Optional[_Iterable[_Union[TracksTableDiff.Row, _Mapping]]] = ...) -> None: ...

class CountersListDiff(_message.Message):
    __slots__ = ("summary", "rows")
    class Row(_message.Message):
        __slots__ = ("name", "owner", "change", "baseline", "target", "baseline_rows", "target_rows", "count_delta", "min_delta", "avg_delta", "max_delta", "subtitle")
        NAME_FIELD_NUMBER: _ClassVar[int]
        OWNER_FIELD_NUMBER: _ClassVar[int]
        CHANGE_FIELD_NUMBER: _ClassVar[int]
        BASELINE_FIELD_NUMBER: _ClassVar[int]
        TARGET_FIELD_NUMBER: _ClassVar[int]
        BASELINE_ROWS_FIELD_NUMBER: _ClassVar[int]
        TARGET_ROWS_FIELD_NUMBER: _ClassVar[int]
        COUNT_DELTA_FIELD_NUMBER: _ClassVar[int]
        MIN_DELTA_FIELD_NUMBER: _ClassVar[int]
        AVG_DELTA_FIELD_NUMBER: _ClassVar[int]
        MAX_DELTA_FIELD_NUMBER: _ClassVar[int]
        SUBTITLE_FIELD_NUMBER: _ClassVar[int]
        name: str
        owner: str
        change: str
        baseline: CountersList.Row
        target: CountersList.Row
        baseline_rows: int
        target_rows: int
        count_delta: int
        min_delta: float
        avg_delta: float
        max_delta: float
        subtitle: str
        def __init__(self, name: _Optional[str] = ..., owner: _Optional[str] = ..., change: _Optional[str] = ..., baseline: _Optional[_Union[CountersList.Row, _Mapping]] = ..., target: _Optional[_Union[CountersList.Row, _Mapping]] = ..., baseline_rows: _Optional[int] = ..., target_rows: _Optional[int] = ..., count_delta: _Optional[int] = ..., min_delta: _Optional[float] = ..., avg_delta: _Optional[float] = ..., max_delta: _Optional[float] = ..., subtitle: _Optional[str] = ...) -> None: ...
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    summary: DiffSummary
    rows: _containers.RepeatedCompositeFieldContainer[CountersListDiff.Row]
    def __init__(self, summary: _Optional[_Union[DiffSummary, _Mapping]] = ..., rows: _Optional[_Iterable[_Union[CountersListDiff.Row, _Mapping]]] = ...) -> None: ...

class OverviewDiff(_message.Message):
    __slots__ = ("slices", "scheduling", "counters", "processes", "absent", "stack_samples", "heap_profile", "heap_dump")
    SLICES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_FIELD_NUMBER: _ClassVar[int]
    ABSENT_FIELD_NUMBER: _ClassVar[int]
    STACK_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    HEAP_PROFILE_FIELD_NUMBER: _ClassVar[int]
    HEAP_DUMP_FIELD_NUMBER: _ClassVar[int]
    slices: SlicesTableDiff
    scheduling: SchedulingSummaryDiff
    counters: CountersListDiff
    processes: ProcessesTableDiff
    absent: _containers.RepeatedCompositeFieldContainer[NotPresent]
    stack_samples: StackFunctionsDiff
    heap_profile: HeapFunctionsDiff
    heap_dump: HeapDumpTypesDiff
    def __init__(self, slices: _Optional[_Union[SlicesTableDiff, _Mapping]] = ..., scheduling: _Optional[_Union[SchedulingSummaryDiff, _Mapping]] = ..., counters: _Optional[_Union[CountersListDiff, _Mapping]] = ..., processes: _Optional[_Union[ProcessesTableDiff, _Mapping]] = ..., absent: _Optional[_Iterable[_Union[NotPresent, _Mapping]]] = ..., stack_samples: _Optional[_Union[StackFunctionsDiff, _Mapping]] = ..., heap_profile: _Optional[_Union[HeapFunctionsDiff, _Mapping]] = ..., heap_dump: _Optional[_Union[HeapDumpTypesDiff, _Mapping]] = ...) -> None: ...

class StackFunctionsDiff(_message.Message):
    __slots__ = ("summary", "rows", "baseline_total_samples", "target_total_samples")
    class Row(_message.Message):
        __slots__ = ("name", "change", "baseline", "target", "self_count_delta", "total_count_delta", "self_percent_delta", "total_percent_delta", "group_label")
        NAME_FIELD_NUMBER: _ClassVar[int]
        CHANGE_FIELD_NUMBER: _ClassVar[int]
        BASELINE_FIELD_NUMBER: _ClassVar[int]
        TARGET_FIELD_NUMBER: _ClassVar[int]
        SELF_COUNT_DELTA_FIELD_NUMBER: _ClassVar[int]
        TOTAL_COUNT_DELTA_FIELD_NUMBER: _ClassVar[int]
        SELF_PERCENT_DELTA_FIELD_NUMBER: _ClassVar[int]
        TOTAL_PERCENT_DELTA_FIELD_NUMBER: _ClassVar[int]
        GROUP_LABEL_FIELD_NUMBER: _ClassVar[int]
        name: str
        change: str
        baseline: StackFunctions.Row
        target: StackFunctions.Row
        self_count_delta: int
        total_count_delta: int
        self_percent_delta: float
        total_percent_delta: float
        group_label: str
        def __init__(self, name: _Optional[str] = ..., change: _Optional[str] = ..., baseline: _Optional[_Union[StackFunctions.Row, _Mapping]] = ..., target: _Optional[_Union[StackFunctions.Row, _Mapping]] = ..., self_count_delta: _Optional[int] = ..., total_count_delta: _Optional[int] = ..., self_percent_delta: _Optional[float] = ..., total_percent_delta: _Optional[float] = ..., group_label: _Optional[str] = ...) -> None: ...
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    BASELINE_TOTAL_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    TARGET_TOTAL_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    summary: DiffSummary
    rows: _containers.RepeatedCompositeFieldContainer[StackFunctionsDiff.Row]
    baseline_total_samples: int
    target_total_samples: int
    def __init__(self, summary: _Optional[_Union[DiffSummary, _Mapping]] = ..., rows: _Optional[_Iterable[_Union[StackFunctionsDiff.Row, _Mapping]]] = ..., baseline_total_samples: _Optional[int] = ..., target_total_samples: _Optional[int] = ...) -> None: ...

class HeapFunctionsDiff(_message.Message):
    __slots__ = ("summary", "rows", "baseline_total_bytes", "target_total_bytes", "baseline_total_count", "target_total_count")
    class Row(_message.Message):
        __slots__ = ("name", "change", "baseline", "target", "self_bytes_delta", "total_bytes_delta", "self_count_delta", "total_count_delta", "avg_size_delta", "self_percent_delta", "total_percent_delta", "self_unreleased_bytes_delta", "total_unreleased_bytes_delta", "group_label")
        NAME_FIELD_NUMBER: _ClassVar[int]
        CHANGE_FIELD_NUMBER: _ClassVar[int]
        BASELINE_FIELD_NUMBER: _ClassVar[int]
        TARGET_FIELD_NUMBER: _ClassVar[int]
        SELF_BYTES_DELTA_FIELD_NUMBER: _ClassVar[int]
        TOTAL_BYTES_DELTA_FIELD_NUMBER: _ClassVar[int]
        SELF_COUNT_DELTA_FIELD_NUMBER: _ClassVar[int]
        TOTAL_COUNT_DELTA_FIELD_NUMBER: _ClassVar[int]
        AVG_SIZE_DELTA_FIELD_NUMBER: _ClassVar[int]
        SELF_PERCENT_DELTA_FIELD_NUMBER: _ClassVar[int]
        TOTAL_PERCENT_DELTA_FIELD_NUMBER: _ClassVar[int]
        SELF_UNRELEASED_BYTES_DELTA_FIELD_NUMBER: _ClassVar[int]
        TOTAL_UNRELEASED_BYTES_DELTA_FIELD_NUMBER: _ClassVar[int]
        GROUP_LABEL_FIELD_NUMBER: _ClassVar[int]
        name: str
        change: str
        baseline: HeapFunctions.Row
        target: HeapFunctions.Row
        self_bytes_delta: int
        total_bytes_delta: int
        self_count_delta: int
        total_count_delta: int
        avg_size_delta: int
        self_percent_delta: float
        total_percent_delta: float
        self_unreleased_bytes_delta: int
        total_unreleased_bytes_delta: int
        group_label: str
        def __init__(self, name: _Optional[str] = ..., change: _Optional[str] = ..., baseline: _Optional[_Union[HeapFunctions.Row, _Mapping]] = ..., target: _Optional[_Union[HeapFunctions.Row, _Mapping]] = ..., self_bytes_delta: _Optional[int] = ..., total_bytes_delta: _Optional[int] = ..., self_count_delta: _Optional[int] = ..., total_count_delta: _Optional[int] = ..., avg_size_delta: _Optional[int] = ..., self_percent_delta: _Optional[float] = ..., total_percent_delta: _Optional[float] = ..., self_unreleased_bytes_delta: _Optional[int] = ..., total_unreleased_bytes_delta: _Optional[int] = ..., group_label: _Optional[str] = ...) -> None: ...
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    BASELINE_TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    TARGET_TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    BASELINE_TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
    TARGET_TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
    summary: DiffSummary
    rows: _containers.RepeatedCompositeFieldContainer[HeapFunctionsDiff.Row]
    baseline_total_bytes: int
    target_total_bytes: int
    baseline_total_count: int
    target_total_count: int
    def __init__(self, summary: _Optional[_Union[DiffSummary, _Mapping]] = ..., rows: _Optional[_Iterable[_Union[HeapFunctionsDiff.Row, _Mapping]]] = ..., baseline_total_bytes: _Optional[int] = ..., target_total_bytes: _Optional[int] = ..., baseline_total_count: _Optional[int] = ..., target_total_count: _Optional[int] = ...) -> None: ...

class HeapDumpTypesDiff(_message.Message):
    __slots__ = ("summary", "rows", "baseline_total_objects", "target_total_objects", "baseline_total_size", "target_total_size", "has_dominators")
    class Row(_message.Message):
        __slots__ = ("name", "change", "baseline", "target", "retained_size_delta", "live_objects_delta", "self_size_delta", "native_size_delta", "avg_size_delta", "retained_percent_delta")
        NAME_FIELD_NUMBER: _ClassVar[int]
        CHANGE_FIELD_NUMBER: _ClassVar[int]
        BASELINE_FIELD_NUMBER: _ClassVar[int]
        TARGET_FIELD_NUMBER: _ClassVar[int]
        RETAINED_SIZE_DELTA_FIELD_NUMBER: _ClassVar[int]
        LIVE_OBJECTS_DELTA_FIELD_NUMBER: _ClassVar[int]
        SELF_SIZE_DELTA_FIELD_NUMBER: _ClassVar[int]
        NATIVE_SIZE_DELTA_FIELD_NUMBER: _ClassVar[int]
        AVG_SIZE_DELTA_FIELD_NUMBER: _ClassVar[int]
        RETAINED_PERCENT_DELTA_FIELD_NUMBER: _ClassVar[int]
        name: str
        change: str
        baseline: HeapDumpTypes.Row
        target: HeapDumpTypes.Row
        retained_size_delta: int
        live_objects_delta: int
        self_size_delta: int
        native_size_delta: int
        avg_size_delta: int
        retained_percent_delta: float
        def __init__(self, name: _Optional[str] = ..., change: _Optional[str] = ..., baseline: _Optional[_Union[HeapDumpTypes.Row, _Mapping]] = ..., target: _Optional[_Union[HeapDumpTypes.Row, _Mapping]] = ..., retained_size_delta: _Optional[int] = ..., live_objects_delta: _Optional[int] = ..., self_size_delta: _Optional[int] = ..., native_size_delta: _Optional[int] = ..., avg_size_delta: _Optional[int] = ..., retained_percent_delta: _Optional[float] = ...) -> None: ...
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    BASELINE_TOTAL_OBJECTS_FIELD_NUMBER: _ClassVar[int]
    TARGET_TOTAL_OBJECTS_FIELD_NUMBER: _ClassVar[int]
    BASELINE_TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    TARGET_TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    HAS_DOMINATORS_FIELD_NUMBER: _ClassVar[int]
    summary: DiffSummary
    rows: _containers.RepeatedCompositeFieldContainer[HeapDumpTypesDiff.Row]
    baseline_total_objects: int
    target_total_objects: int
    baseline_total_size: int
    target_total_size: int
    has_dominators: bool
    def __init__(self, summary: _Optional[_Union[DiffSummary, _Mapping]] = ..., rows: _Optional[_Iterable[_Union[HeapDumpTypesDiff.Row, _Mapping]]] = ..., baseline_total_objects: _Optional[int] = ..., target_total_objects: _Optional[int] = ..., baseline_total_size: _Optional[int] = ..., target_total_size: _Optional[int] = ..., has_dominators: _Optional[bool] = ...) -> None: ...

class CallTreeDiff(_message.Message):
    __slots__ = ("summary", "rows", "unit", "baseline_total_value", "target_total_value", "hidden_roots", "roots")
    class Row(_message.Message):
        __slots__ = ("name", "change", "depth", "parent", "baseline_self_value", "target_self_value", "self_value_delta", "baseline_total_value", "target_total_value", "total_value_delta", "baseline_total_count", "target_total_count", "total_count_delta", "baseline_avg", "target_avg", "avg_delta", "hidden_children")
        NAME_FIELD_NUMBER: _ClassVar[int]
        CHANGE_FIELD_NUMBER: _ClassVar[int]
        DEPTH_FIELD_NUMBER: _ClassVar[int]
        PARENT_FIELD_NUMBER: _ClassVar[int]
        BASELINE_SELF_VALUE_FIELD_NUMBER: _ClassVar[int]
        TARGET_SELF_VALUE_FIELD_NUMBER: _ClassVar[int]
        SELF_VALUE_DELTA_FIELD_NUMBER: _ClassVar[int]
        BASELINE_TOTAL_VALUE_FIELD_NUMBER: _ClassVar[int]
        TARGET_TOTAL_VALUE_FIELD_NUMBER: _ClassVar[int]
        TOTAL_VALUE_DELTA_FIELD_NUMBER: _ClassVar[int]
        BASELINE_TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
        TARGET_TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
        TOTAL_COUNT_DELTA_FIELD_NUMBER: _ClassVar[int]
        BASELINE_AVG_FIELD_NUMBER: _ClassVar[int]
        TARGET_AVG_FIELD_NUMBER: _ClassVar[int]
        AVG_DELTA_FIELD_NUMBER: _ClassVar[int]
        HIDDEN_CHILDREN_FIELD_NUMBER: _ClassVar[int]
        name: str
        change: str
        depth: int
        parent: int
        baseline_self_value: int
        target_self_value: int
        self_value_delta: int
        baseline_total_value: int
        target_total_value: int
        total_value_delta: int
        baseline_total_count: int
        target_total_count: int
        total_count_delta: int
        baseline_avg: int
        target_avg: int
        avg_delta: int
        hidden_children: int
        def __init__(self, name: _Optional[str] = ..., change: _Optional[str] = ..., depth: _Optional[int] = ..., parent: _Optional[int] = ..., baseline_self_value: _Optional[int] = ..., target_self_value: _Optional[int] = ..., self_value_delta: _Optional[int] = ..., baseline_total_value: _Optional[int] = ..., target_total_value: _Optional[int] = ..., total_value_delta: _Optional[int] = ..., baseline_total_count: _Optional[int] = ..., target_total_count: _Optional[int] = ..., total_count_delta: _Optional[int] = ..., baseline_avg: _Optional[int] = ..., target_avg: _Optional[int] = ..., avg_delta: _Optional[int] = ..., hidden_children: _Optional[int] = ...) -> None: ...
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    BASELINE_TOTAL_VALUE_FIELD_NUMBER: _ClassVar[int]
    TARGET_TOTAL_VALUE_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_ROOTS_FIELD_NUMBER: _ClassVar[int]
    ROOTS_FIELD_NUMBER: _ClassVar[int]
    summary: DiffSummary
    rows: _containers.RepeatedCompositeFieldContainer[CallTreeDiff.Row]
    unit: str
    baseline_total_value: int
    target_total_value: int
    hidden_roots: int
    roots: str
    def __init__(self, summary: _Optional[_Union[DiffSummary, _Mapping]] = ..., rows: _Optional[_Iterable[_Union[CallTreeDiff.Row, _Mapping]]] = ..., unit: _Optional[str] = ..., baseline_total_value: _Optional[int] = ..., target_total_value: _Optional[int] = ..., hidden_roots: _Optional[int] = ..., roots: _Optional[str] = ...) -> None: ...

class StackFunctions(_message.Message):
    __slots__ = ("rows", "total_rows", "total_samples", "not_present", "group_by")
    class Row(_message.Message):
        __slots__ = ("name", "self_count", "total_count", "self_percent", "total_percent", "group_value", "group_label")
        NAME_FIELD_NUMBER: _ClassVar[int]
        SELF_COUNT_FIELD_NUMBER: _ClassVar[int]
        TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
        SELF_PERCENT_FIELD_NUMBER: _ClassVar[int]
        TOTAL_PERCENT_FIELD_NUMBER: _ClassVar[int]
        GROUP_VALUE_FIELD_NUMBER: _ClassVar[int]
        GROUP_LABEL_FIELD_NUMBER: _ClassVar[int]
        name: str
        self_count: int
        total_count: int
        self_percent: float
        total_percent: float
        group_value: str
        group_label: str
        def __init__(self, name: _Optional[str] = ..., self_count: _Optional[int] = ..., total_count: _Optional[int] = ..., self_percent: _Optional[float] = ..., total_percent: _Optional[float] = ..., group_value: _Optional[str] = ..., group_label: _Optional[str] = ...) -> None: ...
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    NOT_PRESENT_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[StackFunctions.Row]
    total_rows: int
    total_samples: int
    not_present: bool
    group_by: str
    def __init__(self, rows: _Optional[_Iterable[_Union[StackFunctions.Row, _Mapping]]] = ..., total_rows: _Optional[int] = ..., total_samples: _Optional[int] = ..., not_present: _Optional[bool] = ..., group_by: _Optional[str] = ...) -> None: ...

class HeapFunctions(_message.Message):
    __slots__ = ("rows", "total_rows", "total_bytes", "total_count", "not_present", "group_by")
    class Row(_message.Message):
        __slots__ = ("name", "self_bytes", "total_bytes", "self_count", "total_count", "avg_size", "self_percent", "total_percent", "self_unreleased_bytes", "total_unreleased_bytes", "group_value", "group_label")
        NAME_FIELD_NUMBER: _ClassVar[int]
        SELF_BYTES_FIELD_NUMBER: _ClassVar[int]
        TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
        SELF_COUNT_FIELD_NUMBER: _ClassVar[int]
        TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
        AVG_SIZE_FIELD_NUMBER: _ClassVar[int]
        SELF_PERCENT_FIELD_NUMBER: _ClassVar[int]
        TOTAL_PERCENT_FIELD_NUMBER: _ClassVar[int]
        SELF_UNRELEASED_BYTES_FIELD_NUMBER: _ClassVar[int]
        TOTAL_UNRELEASED_BYTES_FIELD_NUMBER: _ClassVar[int]
        GROUP_VALUE_FIELD_NUMBER: _ClassVar[int]
        GROUP_LABEL_FIELD_NUMBER: _ClassVar[int]
        name: str
        self_bytes: int
        total_bytes: int
        self_count: int
        total_count: int
        avg_size: int
        self_percent: float
        total_percent: float
        self_unreleased_bytes: int
        total_unreleased_bytes: int
        group_value: str
        group_label: str
        def __init__(self, name: _Optional[str] = ..., self_bytes: _Optional[int] = ..., total_bytes: _Optional[int] = ..., self_count: _Optional[int] = ..., total_count: _Optional[int] = ..., avg_size: _Optional[int] = ..., self_percent: _Optional[float] = ..., total_percent: _Optional[float] = ..., self_unreleased_bytes: _Optional[int] = ..., total_unreleased_bytes: _Optional[int] = ..., group_value: _Optional[str] = ..., group_label: _Optional[str] = ...) -> None: ...
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
    NOT_PRESENT_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[HeapFunctions.Row]
    total_rows: int
    total_bytes: int
    total_count: int
    not_present: bool
    group_by: str
    def __init__(self, rows: _Optional[_Iterable[_Union[HeapFunctions.Row, _Mapping]]] = ..., total_rows: _Optional[int] = ..., total_bytes: _Optional[int] = ..., total_count: _Optional[int] = ..., not_present: _Optional[bool] = ..., group_by: _Optional[str] = ...) -> None: ...

class CallTree(_message.Message):
    __slots__ = ("nodes", "unit", "total_value", "total_nodes", "hidden_roots", "hidden_roots_percent", "hidden_roots_max_percent", "roots", "not_present")
    class Node(_message.Message):
        __slots__ = ("name", "depth", "indent", "parent", "self_value", "total_value", "self_percent", "total_percent", "self_count", "total_count", "hidden_children", "hidden_percent", "hidden_max_percent")
        NAME_FIELD_NUMBER: _ClassVar[int]
        DEPTH_FIELD_NUMBER: _ClassVar[int]
        INDENT_FIELD_NUMBER: _ClassVar[int]
        PARENT_FIELD_NUMBER: _ClassVar[int]
        SELF_VALUE_FIELD_NUMBER: _ClassVar[int]
        TOTAL_VALUE_FIELD_NUMBER: _ClassVar[int]
        SELF_PERCENT_FIELD_NUMBER: _ClassVar[int]
        TOTAL_PERCENT_FIELD_NUMBER: _ClassVar[int]
        SELF_COUNT_FIELD_NUMBER: _ClassVar[int]
        TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
        HIDDEN_CHILDREN_FIELD_NUMBER: _ClassVar[int]
        HIDDEN_PERCENT_FIELD_NUMBER: _ClassVar[int]
        HIDDEN_MAX_PERCENT_FIELD_NUMBER: _ClassVar[int]
        name: str
        depth: int
        indent: int
        parent: int
        self_value: int
        total_value: int
        self_percent: float
        total_percent: float
        self_count: int
        total_count: int
        hidden_children: int
        hidden_percent: float
        hidden_max_percent: float
        def __init__(self, name: _Optional[str] = ..., depth: _Optional[int] = ..., indent: _Optional[int] = ..., parent: _Optional[int] = ..., self_value: _Optional[int] = ..., total_value: _Optional[int] = ..., self_percent: _Optional[float] = ..., total_percent: _Optional[float] = ..., self_count: _Optional[int] = ..., total_count: _Optional[int] = ..., hidden_children: _Optional[int] = ..., hidden_percent: _Optional[float] = ..., hidden_max_percent: _Optional[float] = ...) -> None: ...
    NODES_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_VALUE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_NODES_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_ROOTS_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_ROOTS_PERCENT_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_ROOTS_MAX_PERCENT_FIELD_NUMBER: _ClassVar[int]
    ROOTS_FIELD_NUMBER: _ClassVar[int]
    NOT_PRESENT_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[CallTree.Node]
    unit: str
    total_value: int
    total_nodes: int
    hidden_roots: int
    hidden_roots_percent: float
    hidden_roots_max_percent: float
    roots: str
    not_present: bool
    def __init__(self, nodes: _Optional[_Iterable[_Union[CallTree.Node, _Mapping]]] = ..., unit: _Optional[str] = ..., total_value: _Optional[int] = ..., total_nodes: _Optional[int] = ..., hidden_roots: _Optional[int] = ..., hidden_roots_percent: _Optional[float] = ..., hidden_roots_max_percent: _Optional[float] = ..., roots: _Optional[str] = ..., not_present: _Optional[bool] = ...) -> None: ...

class HeapDumpTypes(_message.Message):
    __slots__ = ("rows", "total_rows", "total_objects", "total_size", "dump_count", "skipped_dumps", "has_dominators", "not_present")
    class Row(_message.Message):
        __slots__ = ("name", "retained_size", "live_objects", "self_size", "native_size", "retained_percent", "avg_size")
        NAME_FIELD_NUMBER: _ClassVar[int]
        RETAINED_SIZE_FIELD_NUMBER: _ClassVar[int]
        LIVE_OBJECTS_FIELD_NUMBER: _ClassVar[int]
        SELF_SIZE_FIELD_NUMBER: _ClassVar[int]
        NATIVE_SIZE_FIELD_NUMBER: _ClassVar[int]
        RETAINED_PERCENT_FIELD_NUMBER: _ClassVar[int]
        AVG_SIZE_FIELD_NUMBER: _ClassVar[int]
        name: str
        retained_size: int
        live_objects: int
        self_size: int
        native_size: int
        retained_percent: float
        avg_size: int
        def __init__(self, name: _Optional[str] = ..., retained_size: _Optional[int] = ..., live_objects: _Optional[int] = ..., self_size: _Optional[int] = ..., native_size: _Optional[int] = ..., retained_percent: _Optional[float] = ..., avg_size: _Optional[int] = ...) -> None: ...
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_OBJECTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    DUMP_COUNT_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_DUMPS_FIELD_NUMBER: _ClassVar[int]
    HAS_DOMINATORS_FIELD_NUMBER: _ClassVar[int]
    NOT_PRESENT_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[HeapDumpTypes.Row]
    total_rows: int
    total_objects: int
    total_size: int
    dump_count: int
    skipped_dumps: int
    has_dominators: bool
    not_present: bool
    def __init__(self, rows: _Optional[_Iterable[_Union[HeapDumpTypes.Row, _Mapping]]] = ..., total_rows: _Optional[int] = ..., total_objects: _Optional[int] = ..., total_size: _Optional[int] = ..., dump_count: _Optional[int] = ..., skipped_dumps: _Optional[int] = ..., has_dominators: _Optional[bool] = ..., not_present: _Optional[bool] = ...) -> None: ...

class DimensionsList(_message.Message):
    __slots__ = ("dimensions",)
    class Value(_message.Message):
        __slots__ = ("value", "label", "display_name", "track_count", "thread_count", "process_count")
        VALUE_FIELD_NUMBER: _ClassVar[int]
        LABEL_FIELD_NUMBER: _ClassVar[int]
        DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
        TRACK_COUNT_FIELD_NUMBER: _ClassVar[int]
        THREAD_COUNT_FIELD_NUMBER: _ClassVar[int]
        PROCESS_COUNT_FIELD_NUMBER: _ClassVar[int]
        value: str
        label: str
        display_name: str
        track_count: int
        thread_count: int
        process_count: int
        def __init__(self, value: _Optional[str] = ..., label: _Optional[str] = ..., display_name: _Optional[str] = ..., track_count: _Optional[int] = ..., thread_count: _Optional[int] = ..., process_count: _Optional[int] = ...) -> None: ...
    class Dimension(_message.Message):
        __slots__ = ("name", "is_well_known", "label_template", "sources", "values", "in_subtitles", "track_count")
        NAME_FIELD_NUMBER: _ClassVar[int]
        IS_WELL_KNOWN_FIELD_NUMBER: _ClassVar[int]
        LABEL_TEMPLATE_FIELD_NUMBER: _ClassVar[int]
        SOURCES_FIELD_NUMBER: _ClassVar[int]
        VALUES_FIELD_NUMBER: _ClassVar[int]
        IN_SUBTITLES_FIELD_NUMBER: _ClassVar[int]
        TRACK_COUNT_FIELD_NUMBER: _ClassVar[int]
        name: str
        is_well_known: bool
        label_template: str
        sources: _containers.RepeatedScalarFieldContainer[str]
        values: _containers.RepeatedCompositeFieldContainer[DimensionsList.Value]
        in_subtitles: bool
        track_count: int
        def __init__(self, name: _Optional[str] = ..., is_well_known: _Optional[bool] = ..., label_template: _Optional[str] = ..., sources: _Optional[_Iterable[str]] = ..., values: _Optional[_Iterable[_Union[DimensionsList.Value, _Mapping]]] = ..., in_subtitles: _Optional[bool] = ..., track_count: _Optional[int] = ...) -> None: ...
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedCompositeFieldContainer[DimensionsList.Dimension]
    def __init__(self, dimensions: _Optional[_Iterable[_Union[DimensionsList.Dimension, _Mapping]]] = ...) -> None: ...

class DimensionsCompare(_message.Message):
    __slots__ = ("by", "names", "total_rows", "baseline_value", "baseline_label", "totals", "waits", "steps", "collectives", "likely_straggler", "likely_straggler_label", "percentiles_left_out")
    class Value(_message.Message):
        __slots__ = ("value", "label", "stats", "self_dur", "straggler", "change", "count_delta", "total_dur_delta", "self_dur_delta", "avg_dur_delta", "max_dur_delta")
        VALUE_FIELD_NUMBER: _ClassVar[int]
        LABEL_FIELD_NUMBER: _ClassVar[int]
        STATS_FIELD_NUMBER: _ClassVar[int]
        SELF_DUR_FIELD_NUMBER: _ClassVar[int]
        STRAGGLER_FIELD_NUMBER: _ClassVar[int]
        CHANGE_FIELD_NUMBER: _ClassVar[int]
        COUNT_DELTA_FIELD_NUMBER: _ClassVar[int]
        TOTAL_DUR_DELTA_FIELD_NUMBER: _ClassVar[int]
        SELF_DUR_DELTA_FIELD_NUMBER: _ClassVar[int]
        AVG_DUR_DELTA_FIELD_NUMBER: _ClassVar[int]
        MAX_DUR_DELTA_FIELD_NUMBER: _ClassVar[int]
        value: str
        label: str
        stats: DurationStats
        self_dur: int
        straggler: bool
        change: str
        count_delta: int
        total_dur_delta: int
        self_dur_delta: int
        avg_dur_delta: int
        max_dur_delta: int
        def __init__(self, value: _Optional[str] = ..., label: _Optional[str] = ..., stats: _Optional[_Union[DurationStats, _Mapping]] = ..., self_dur: _Optional[int] = ..., straggler: _Optional[bool] = ..., change: _Optional[str] = ..., count_delta: _Optional[int] = ..., total_dur_delta: _Optional[int] = ..., self_dur_delta: _Optional[int] = ..., avg_dur_delta: _Optional[int] = ..., max_dur_delta: _Optional[int] = ...) -> None: ...
    class Name(_message.Message):
        __slots__ = ("name", "values", "total_dur", "count", "median_total", "spread", "straggler", "straggler_label", "collective")
        NAME_FIELD_NUMBER: _ClassVar[int]
        VALUES_FIELD_NUMBER: _ClassVar[int]
        TOTAL_DUR_FIELD_NUMBER: _ClassVar[int]
        COUNT_FIELD_NUMBER: _ClassVar[int]
        MEDIAN_TOTAL_FIELD_NUMBER: _ClassVar[int]
        SPREAD_FIELD_NUMBER: _ClassVar[int]
        STRAGGLER_FIELD_NUMBER: _ClassVar[int]
        STRAGGLER_LABEL_FIELD_NUMBER: _ClassVar[int]
        COLLECTIVE_FIELD_NUMBER: _ClassVar[int]
        name: str
        values: _containers.RepeatedCompositeFieldContainer[DimensionsCompare.Value]
        total_dur: int
        count: int
        median_total: float
        spread: float
        straggler: str
        straggler_label: str
        collective: bool
        def __init__(self, name: _Optional[str] = ..., values: _Optional[_Iterable[_Union[DimensionsCompare.Value, _Mapping]]] = ..., total_dur: _Optional[int] = ..., count: _Optional[int] = ..., median_total: _Optional[float] = ..., spread: _Optional[float] = ..., straggler: _Optional[str] = ..., straggler_label: _Optional[str] = ..., collective: _Optional[bool] = ...) -> None: ...
    class ValueTotal(_message.Message):
        __slots__ = ("value", "label", "slice_count", "slice_time", "track_count")
        VALUE_FIELD_NUMBER: _ClassVar[int]
        LABEL_FIELD_NUMBER: _ClassVar[int]
        SLICE_COUNT_FIELD_NUMBER: _ClassVar[int]
        SLICE_TIME_FIELD_NUMBER: _ClassVar[int]
        TRACK_COUNT_FIELD_NUMBER: _ClassVar[int]
        value: str
        label: str
        slice_count: int
        slice_time: int
        track_count: int
        def __init__(self, value: _Optional[str] = ..., label: _Optional[str] = ..., slice_count: _Optional[int] = ..., slice_time: _Optional[int] = ..., track_count: _Optional[int] = ...) -> None: ...
    class Wait(_message.Message):
        __slots__ = ("value", "label", "steps", "step_time", "in_collectives", "outside", "likely_straggler")
        VALUE_FIELD_NUMBER: _ClassVar[int]
        LABEL_FIELD_NUMBER: _ClassVar[int]
        STEPS_FIELD_NUMBER: _ClassVar[int]
        STEP_TIME_FIELD_NUMBER: _ClassVar[int]
        IN_COLLECTIVES_FIELD_NUMBER: _ClassVar[int]
        OUTSIDE_FIELD_NUMBER: _ClassVar[int]
        LIKELY_STRAGGLER_FIELD_NUMBER: _ClassVar[int]
        value: str
        label: str
        steps: int
        step_time: int
        in_collectives: int
        outside: int
        likely_straggler: bool
        def __init__(self, value: _Optional[str] = ..., label: _Optional[str] = ..., steps: _Optional[int] = ..., step_time: _Optional[int] = ..., in_collectives: _Optional[int] = ..., outside: _Optional[int] = ..., likely_straggler: _Optional[bool] = ...) -> None: ...
    BY_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    BASELINE_VALUE_FIELD_NUMBER: _ClassVar[int]
    BASELINE_LABEL_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    WAITS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    COLLECTIVES_FIELD_NUMBER: _ClassVar[int]
    LIKELY_STRAGGLER_FIELD_NUMBER: _ClassVar[int]
    LIKELY_STRAGGLER_LABEL_FIELD_NUMBER: _ClassVar[int]
    PERCENTILES_LEFT_OUT_FIELD_NUMBER: _ClassVar[int]
    by: str
    names: _containers.RepeatedCompositeFieldContainer[DimensionsCompare.Name]
    total_rows: int
    baseline_value: str
    baseline_label: str
    totals: _containers.RepeatedCompositeFieldContainer[DimensionsCompare.ValueTotal]
    waits: _containers.RepeatedCompositeFieldContainer[DimensionsCompare.Wait]
    steps: str
    collectives: _containers.RepeatedScalarFieldContainer[str]
    likely_straggler: str
    likely_straggler_label: str
    percentiles_left_out: bool
    def __init__(self, by: _Optional[str] = ..., names: _Optional[_Iterable[_Union[DimensionsCompare.Name, _Mapping]]] = ..., total_rows: _Optional[int] = ..., baseline_value: _Optional[str] = ..., baseline_label: _Optional[str] = ..., totals: _Optional[_Iterable[_Union[DimensionsCompare.ValueTotal, _Mapping]]] = ..., waits: _Optional[_Iterable[_Union[DimensionsCompare.Wait, _Mapping]]] = ..., steps: _Optional[str] = ..., collectives: _Optional[_Iterable[str]] = ..., likely_straggler: _Optional[str] = ..., likely_straggler_label: _Optional[str] = ..., percentiles_left_out: _Optional[bool] = ...) -> None: ...
