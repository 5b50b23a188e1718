"""Figures of tokenizers and shard folders as plain data (tokenizer_figures, shard_figures), and
the self-contained HTML page that draws them (tokenizer_page, shards_page, write_report). The
CLI's terminal output, its --json and the page all read the same figures."""

from .page import shards_page as shards_page
from .page import tokenizer_page as tokenizer_page
from .page import write_report as write_report
from .shard_stats import shard_figures as shard_figures
from .tokenizer_stats import tokenizer_figures as tokenizer_figures
