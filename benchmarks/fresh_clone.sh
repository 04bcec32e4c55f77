# Sourced by the benchmarks that start from a fresh clone (bench_figures_cold.sh, bench_reduced_grid.sh).
# fresh_clone NAME sets repo (this checkout), commit (its HEAD), work (WORK, or a new /tmp/NAME.XXXXXX) and clone
# ($work/otod: a clean clone of HEAD, committed files only), with an empty $work/xla for the compilation cache.
fresh_clone() {
  repo=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
  commit=$(git -C "$repo" rev-parse HEAD)
  work=${WORK:-$(mktemp -d "/tmp/$1.XXXXXX")}
  clone=$work/otod
  rm -rf "$clone" "$work/xla" && mkdir -p "$work/xla"
  git clone -q --no-checkout "$repo" "$clone" && git -C "$clone" checkout -q "$commit"
}
