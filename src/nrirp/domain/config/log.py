"""The ``log`` block: debug switches, source locations and klog options."""

from __future__ import annotations

import re
from collections.abc import Iterator

import attrs

from nrirp.domain.config.enums import KlogSeverity
from nrirp.domain.config.errors import Issue, quote
from nrirp.domain.config.keys import ref
from nrirp.domain.config.validation import at, check_range

_VMODULE_ITEM = re.compile(r"[^=,\s]+=\d+")
_BACKTRACE_AT = re.compile(r"[^:\s]+:\d+")


@attrs.frozen(kw_only=True)
class KlogConfig:
    """klog options under their klog flag names; unset options keep klog's defaults."""

    add_dir_header: bool | None = attrs.field(default=None, metadata=ref("add_dir_header"))
    alsologtostderr: bool | None = attrs.field(default=None, metadata=ref("alsologtostderr"))
    log_backtrace_at: str | None = attrs.field(default=None, metadata=ref("log_backtrace_at"))
    log_dir: str | None = attrs.field(default=None, metadata=ref("log_dir"))
    log_file: str | None = attrs.field(default=None, metadata=ref("log_file"))
    log_file_max_size: int | None = attrs.field(default=None, metadata=ref("log_file_max_size"))
    logtostderr: bool | None = attrs.field(default=None, metadata=ref("logtostderr"))
    one_output: bool | None = attrs.field(default=None, metadata=ref("one_output"))
    skip_headers: bool | None = attrs.field(default=None, metadata=ref("skip_headers"))
    skip_log_headers: bool | None = attrs.field(default=None, metadata=ref("skip_log_headers"))
    stderrthreshold: KlogSeverity | None = attrs.field(
        default=None, metadata=ref("stderrthreshold")
    )
    v: int | None = attrs.field(default=None, metadata=ref("v"))
    vmodule: str | None = attrs.field(default=None, metadata=ref("vmodule"))

    def config_problems(self) -> Iterator[Issue]:
        yield from check_range(self, "log_file_max_size", 0)
        yield from check_range(self, "v", 0)
        if self.vmodule is not None and not all(
            _VMODULE_ITEM.fullmatch(item) for item in self.vmodule.split(",")
        ):
            yield at(
                self,
                "vmodule",
                f"invalid value {quote(self.vmodule)}: expected 'pattern=N' items joined by ','",
            )
        if self.log_backtrace_at is not None and not _BACKTRACE_AT.fullmatch(self.log_backtrace_at):
            yield at(
                self,
                "log_backtrace_at",
                f"invalid value {quote(self.log_backtrace_at)}: expected 'file.go:line'",
            )


@attrs.frozen(kw_only=True)
class LogConfig:
    """``log``: ``debug`` lists the loggers to debug (``*`` for all), ``source`` adds the
    logging call's location to each line."""

    debug: tuple[str, ...] = attrs.field(default=(), metadata=ref("debug"))
    source: bool = attrs.field(default=False, metadata=ref("source"))
    klog: KlogConfig = attrs.field(factory=KlogConfig, metadata=ref("klog"))

    def config_problems(self) -> Iterator[Issue]:
        for index, name in enumerate(self.debug):
            if not name.strip():
                yield at(self, "debug", "invalid value '': expected a logger name or '*'", index)
