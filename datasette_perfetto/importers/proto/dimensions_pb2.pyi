from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Dimension(_message.Message):
    __slots__ = ("name_iid", "int_value", "string_value_iid", "display_name_iid")
    NAME_IID_FIELD_NUMBER: _ClassVar[int]
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    STRING_VALUE_IID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_IID_FIELD_NUMBER: _ClassVar[int]
    name_iid: int
    int_value: int
    string_value_iid: int
    display_name_iid: int
    def __init__(self, name_iid: _Optional[int] = ..., int_value: _Optional[int] = ..., string_value_iid: _Optional[int] = ..., display_name_iid: _Optional[int] = ...) -> None: ...

class TrackDescriptorDimensions(_message.Message):
    __slots__ = ("dimensions",)
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedCompositeFieldContainer[Dimension]
    def __init__(self, dimensions: _Optional[_Iterable[_Union[Dimension, _Mapping]]] = ...) -> None: ...

class InternedDimensionString(_message.Message):
    __slots__ = ("iid", "str")
    IID_FIELD_NUMBER: _ClassVar[int]
    STR_FIELD_NUMBER: _ClassVar[int]
    iid: int
    str: bytes
    def __init__(self, iid: _Optional[int] = ..., str: _Optional[bytes] = ...) -> None: ...

class InternedDimensionData(_message.Message):
    __slots__ = ("dimension_names", "dimension_string_values", "dimension_display_names")
    DIMENSION_NAMES_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_STRING_VALUES_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_DISPLAY_NAMES_FIELD_NUMBER: _ClassVar[int]
    dimension_names: _containers.RepeatedCompositeFieldContainer[InternedDimensionString]
    dimension_string_values: _containers.RepeatedCompositeFieldContainer[InternedDimensionString]
    dimension_display_names: _containers.RepeatedCompositeFieldContainer[InternedDimensionString]
    def __init__(self, dimension_names: _Optional[_Iterable[_Union[InternedDimensionString, _Mapping]]] = ..., dimension_string_values: _Optional[_Iterable[_Union[InternedDimensionString, _Mapping]]] = ..., dimension_display_names: _Optional[_Iterable[_Union[InternedDimensionString, _Mapping]]] = ...) -> None: ...
