"""NCCL's tuning model per release line, 2.19 to 2.29, as data: one :class:`NcclVersion` record each.

Each record holds what :mod:`sim.nccl.model` reads from ``src/graph/tuning.cc`` (and the skips of
``src/enqueue.cc`` updateCollCostTable) of the latest patch of its line (tag in ``tag``): the
constant tables and the rule switches where the lines differ, each with its tag and file:line in
``cites``. Rows of the tables: algorithms Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree,
PAT; protocols LL, LL128, Simple; compute-capability rows Volta, Ampere, Hopper(, Blackwell).

``DEFAULT`` ("2.27") is what the model has always computed: v2.27.7-1 with the Blackwell
per-channel caps of v2.29.2-1 (measured values where v2.27.7-1 had 2 x Hopper placeholders).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sim.errors import CollsimError

__all__ = ["DEFAULT", "VERSIONS", "NcclVersion", "known_versions", "nccl_version"]

_Z = (0, 0, 0)


@dataclass(frozen=True)
class NcclVersion:
    """One NCCL release line's tuning model: constants and the rules that changed between lines."""

    name: str  # the release line, "2.27"
    tag: str  # the tag whose tuning.cc / enqueue.cc it follows
    base_lat: tuple  # baseLat[algorithm][protocol], us
    hw_lat: tuple  # hwLat[NVLink|PCI|NET][algorithm][protocol], us
    ll_max_bws: tuple  # llMaxBws rows (3 rows before 2.25: no Blackwell row)
    per_ch_max_ring_ll128_bws: tuple
    per_ch_max_tree_ll128_bws: tuple
    per_ch_max_tree_bws: tuple
    per_ch_max_nvls_tree_bws: tuple | None = None  # 2.28+
    nvls_efficiency: tuple | None = None  # 2.28+: per compute-capability row
    nvls_bw: str = "split"  # "min" (<= 2.26), "split" (2.27: AG/RS x (ppn-1)/ppn and inter x 0.9), "efficiency" (2.28+)
    nvls_ratio_ag_rs: bool = False  # <= 2.22: NVLS all_gather/reduce_scatter also x 5/6 (busbw to algbw)
    nvls_ag_rs_arity: bool = True  # 2.25+: no NVLS all_gather/reduce_scatter past 32 local ranks
    nvls_tree_correction: bool = False  # 2.29: NVLSTree all_reduce x treeCorrectionFactor on Blackwell x86
    pat: bool = True  # 2.23+: the PAT algorithm exists
    pat_bw_factor: float = 0.75  # 0.85 in 2.23
    pat_min_cc: int = 60  # 2.26+: ncclPatEnable needs SM60 (0: no check)
    pat_base_lat_us: float = 8.0  # the literal 8 us of PAT's latency (2.28+: baseLat's PAT row instead)
    inter_lat_tree_at_ppn1: bool = True  # 2.23+: one GPU per node uses Tree's network latency
    ring_ll128_ppn1_factor: float = 0.92  # <= 2.22: 0.7 when ppn < 2
    legacy_inter_steps: bool = False  # <= 2.22: all_reduce ring has 2 x nNodes network steps (2.23+: 2 x (nNodes - 1))
    ll128_compcaps: tuple[int, ...] | None = None  # <= 2.26: LL128 only on these exact SMs (None: SM70+)
    ring_ll_quarter: bool = False  # <= 2.20: Ring/LL busBw x 1/4 (x 1/3 on one node for broadcast/all_gather/reduce_scatter); 2.21+: x 0.5
    collnet_direct_ag_rs: bool = True  # 2.20+: CollNetDirect weighed for all_gather/reduce_scatter (2.19: Ring and NVLS only)
    also: tuple[str, ...] = ()  # other names for this record (patches with the same tuning.cc)
    cites: dict = field(default_factory=dict, compare=False)

    def ring_ll_factor(self, nodes: int, op: str) -> float:
        """What Ring/LL's busBw is multiplied by before the llMaxBws cap (tuning.cc's Ring/LL line)."""
        if not self.ring_ll_quarter:
            return 0.5
        return 1.0 / 4.0 if nodes > 1 or op in ("all_reduce", "reduce") else 1.0 / 3.0

    def compcap_index(self, cc: int) -> int:
        """tuning.cc compCapIndex: Volta, Ampere, Hopper, Blackwell (Blackwell -> Hopper before 2.25)."""
        index = 3 if cc >= 100 else 2 if cc >= 90 else 1 if cc >= 80 else 0
        return min(index, len(self.per_ch_max_tree_bws) - 1)


_BASE_LAT = ((6.8, 14.0, 8.4), (6.6, 14.0, 8.4), _Z, _Z, _Z, _Z, _Z)
_HW_LAT = (
    ((0.6, 1.25, 4.0), (0.6, 1.9, 3.4), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 25), (0, 0, 25), _Z),  # NVLink
    ((1.0, 1.9, 4.0), (1.0, 2.5, 5.7), (0, 0, 3.7), (0, 0, 2.8), _Z, _Z, _Z),  # PCI
    ((5.0, 8.5, 14), (2.7, 4.0, 14.0), (0, 0, 31), (0, 0, 30), (0, 0, 18), (0, 0, 14), _Z),  # NET
)
_LL_MAX_BWS = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0))
_RING_LL128 = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7))
_TREE_LL128 = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0))
_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0))
# 2.25-2.27: Blackwell rows are 2 x Hopper placeholders
_BW2X = {
    "ll_max_bws": (*_LL_MAX_BWS, (2 * 141.0, 2 * 45.0, 2 * 35.0)),
    "per_ch_max_ring_ll128_bws": (*_RING_LL128, (2 * 36.7, 2 * 36.7, 2 * 36.7)),
    "per_ch_max_tree_ll128_bws": (*_TREE_LL128, (2 * 36.7, 2 * 36.7, 2 * 29.0)),
    "per_ch_max_tree_bws": (*_TREE, (2 * 38.7, 2 * 41.4, 2 * 36.0)),
}
# 2.28+: measured Blackwell caps (Ring LL128's row changes within the lines: set per record)
_TREE_LL128_B = (*_TREE_LL128, (55.6, 31.67, 20.0))
_TREE_B = (*_TREE, (70.0, 42.8, 24.0))
_HW_LAT_28 = (
    (*_HW_LAT[0][:6], (0, 0, 4.0)),
    (*_HW_LAT[1][:6], (0, 0, 4.0)),
    (*_HW_LAT[2][:5], (0, 0, 20.9), (0, 0, 14)),
)
_V228 = {
    "base_lat": (*_BASE_LAT[:6], (8.0, 8.0, 8.0)),
    "hw_lat": _HW_LAT_28,
    "ll_max_bws": _BW2X["ll_max_bws"],
    "per_ch_max_tree_ll128_bws": _TREE_LL128_B,
    "per_ch_max_tree_bws": _TREE_B,
    "per_ch_max_nvls_tree_bws": ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 43.8)),
    "nvls_efficiency": (0.0, 0.0, 0.85, 0.74),
    "nvls_bw": "efficiency",
    "pat_base_lat_us": 0.0,
}
_OLD_LL128_SMS = (70, 80, 90)  # <= 2.24: switch (minCompCap) { case 70, 80, 90 }; default off
_LL128_SMS_25 = (70, 80, 90, 100, 120)  # 2.25-2.26 add case 100, 120

_LEGACY_22 = {  # 2.21, 2.22: Tree/Simple latency 28 us everywhere, base 0; no PAT
    "base_lat": (((6.8, 14.0, 0)), *_BASE_LAT[1:]),
    "hw_lat": tuple(((lat[0][0], lat[0][1], 28), *lat[1:]) for lat in _HW_LAT),
    "ll_max_bws": _LL_MAX_BWS,
    "per_ch_max_ring_ll128_bws": _RING_LL128,
    "per_ch_max_tree_ll128_bws": _TREE_LL128,
    "per_ch_max_tree_bws": _TREE,
    "nvls_bw": "min",
    "nvls_ratio_ag_rs": True,
    "nvls_ag_rs_arity": False,
    "pat": False,
    "pat_min_cc": 0,
    "inter_lat_tree_at_ppn1": False,
    "ring_ll128_ppn1_factor": 0.7,
    "legacy_inter_steps": True,
    "ll128_compcaps": _OLD_LL128_SMS,
}
_OLD = {  # 2.23, 2.24: as 2.27 but no Blackwell rows, NVLS bw min(intra, inter), old LL128 switch
    "base_lat": _BASE_LAT,
    "hw_lat": _HW_LAT,
    "ll_max_bws": _LL_MAX_BWS,
    "per_ch_max_ring_ll128_bws": _RING_LL128,
    "per_ch_max_tree_ll128_bws": _TREE_LL128,
    "per_ch_max_tree_bws": _TREE,
    "nvls_bw": "min",
    "nvls_ag_rs_arity": False,
    "pat_min_cc": 0,
    "ll128_compcaps": _OLD_LL128_SMS,
}

_T = "src/graph/tuning.cc"
_E = "src/enqueue.cc"


def _cites(tag: str, **lines: str) -> dict:
    return {key: f"{tag} {where}" for key, where in lines.items()}


VERSIONS: dict[str, NcclVersion] = {}


def _add(record: NcclVersion) -> None:
    VERSIONS[record.name] = record


# 2.19, 2.20: as 2.21 but Ring/LL x 1/4 (1/3), NVLS/NVLSTree 23 us on NVLink, Hopper's llMaxBws row = Ampere's;
# 2.19 also weighs no CollNetDirect for all_gather/reduce_scatter. 2.20's MNNVL rule (an NVLink domain of several
# hosts counts as one node, NVLS and NVLSTree off there: tuning.cc:136, 286, 293) is not modelled: the presets
# count a domain as one node already, and the NVLS switch-off is not applied (2.20 does not know Blackwell either).
_NVLS_23 = ((*_HW_LAT[0][:4], (0, 0, 23), (0, 0, 23), _Z), *_HW_LAT[1:])  # NVLink NVLS, NVLSTree 23 us (2.21+: 25)
_PRE_21 = {
    **_LEGACY_22,
    "hw_lat": tuple(((lat[0][0], lat[0][1], 28), *lat[1:]) for lat in _NVLS_23),  # and Tree/Simple 28 us, as 2.21-2.22
    "ll_max_bws": (*_LL_MAX_BWS[:2], _LL_MAX_BWS[1]),
    "ring_ll_quarter": True,
}
_add(NcclVersion("2.19", "v2.19.3-1", **_PRE_21, pat_bw_factor=0.0, collnet_direct_ag_rs=False, also=("2.19.1", "2.19.3", "2.19.4"), cites=_cites(
    "v2.19.3-1 (tuning.cc identical in v2.19.1-1 and v2.19.4-1)", base_lat=f"{_T}:56-59", hw_lat=f"{_T}:65-78 (NVLS, NVLSTree 23 us on NVLink)",
    ll_max_bws=f"{_T}:86-90 (Hopper row = Ampere's)", per_ch_max_ring_ll128_bws=f"{_T}:92-96", per_ch_max_tree_ll128_bws=f"{_T}:97-101",
    per_ch_max_tree_bws=f"{_T}:102-106", compcap_index=f"{_T}:139", legacy_inter_steps=f"{_T}:161-163",
    collnet_direct_ag_rs=f"{_T}:168-169 (all_gather/reduce_scatter: Ring and NVLS only)", nvls_bw=f"{_T}:175-176",
    ring_ll_quarter=f"{_T}:180", ring_ll128_ppn1_factor=f"{_T}:181", tree_bw=f"{_T}:174 (bwIntra on <= 2 nodes), 182 (x .92, perChMaxTreeBw)",
    nvls_ratio_ag_rs=f"{_T}:199", inter_lat_tree_at_ppn1=f"{_T}:208", ll128_compcaps=f"{_T}:293-298",
    tree_correction=f"{_T}:394-398, 417", pick=f"{_E}:1151-1204 (topoGetAlgoInfo: strict <, algorithms outer)",
    pat="no NCCL_ALGO_PAT (6 algorithms)", nvls_ag_rs_arity=f"{_E}:1169-1173 (no arity check)",
)))  # fmt: skip
_add(replace(VERSIONS["2.19"], name="2.20", tag="v2.20.5-1", collnet_direct_ag_rs=True, also=("2.20.3", "2.20.5"), cites=_cites(
    "v2.20.5-1 (tuning.cc identical in v2.20.3-1)", base_lat=f"{_T}:56-59", hw_lat=f"{_T}:65-78 (NVLS, NVLSTree 23 us on NVLink)",
    ll_max_bws=f"{_T}:86-90 (Hopper row = Ampere's)", per_ch_max_ring_ll128_bws=f"{_T}:92-96", per_ch_max_tree_ll128_bws=f"{_T}:97-101",
    per_ch_max_tree_bws=f"{_T}:102-106", mnnvl=f"{_T}:136, 286, 293 (not modelled)", compcap_index=f"{_T}:140",
    legacy_inter_steps=f"{_T}:162-164", collnet_direct_ag_rs=f"{_T}:169-170", nvls_bw=f"{_T}:176", ring_ll_quarter=f"{_T}:181",
    ring_ll128_ppn1_factor=f"{_T}:182", nvls_ratio_ag_rs=f"{_T}:217", inter_lat_tree_at_ppn1=f"{_T}:228", ll128_compcaps=f"{_T}:314-319",
    pat="no NCCL_ALGO_PAT", nvls_ag_rs_arity=f"{_E}:1464-1470 (no arity check)",
)))  # fmt: skip
_add(NcclVersion("2.21", "v2.21.5-1", **_LEGACY_22, pat_bw_factor=0.0, cites=_cites(
    "v2.21.5-1", base_lat=f"{_T}:56-59", hw_lat=f"{_T}:65-78", ll_max_bws=f"{_T}:86-90",
    per_ch_max_ring_ll128_bws=f"{_T}:92-96", per_ch_max_tree_ll128_bws=f"{_T}:97-101", per_ch_max_tree_bws=f"{_T}:102-106",
    compcap_index=f"{_T}:139", legacy_inter_steps=f"{_T}:161-163", nvls_bw=f"{_T}:175",
    ring_ll128_ppn1_factor=f"{_T}:181", nvls_ratio_ag_rs=f"{_T}:213-216", inter_lat_tree_at_ppn1=f"{_T}:227",
    ll128_compcaps=f"{_T}:311-315", pat="no NCCL_ALGO_PAT (6 algorithms)", nvls_ag_rs_arity=f"{_E}:1502-1505 (no arity check)",
)))  # fmt: skip
_add(replace(VERSIONS["2.21"], name="2.22", tag="v2.22.3-1", cites=_cites(
    "v2.22.3-1", base_lat=f"{_T}:56-59", hw_lat=f"{_T}:65-78", ll_max_bws=f"{_T}:86-90",
    per_ch_max_ring_ll128_bws=f"{_T}:92-96", per_ch_max_tree_ll128_bws=f"{_T}:97-101", per_ch_max_tree_bws=f"{_T}:102-106",
    compcap_index=f"{_T}:137", legacy_inter_steps=f"{_T}:159-161", nvls_bw=f"{_T}:173",
    ring_ll128_ppn1_factor=f"{_T}:179", nvls_ratio_ag_rs=f"{_T}:211-214", inter_lat_tree_at_ppn1=f"{_T}:225",
    ll128_compcaps=f"{_T}:309-313", pat="no NCCL_ALGO_PAT", nvls_ag_rs_arity=f"{_E}:1557-1560 (no arity check)",
)))  # fmt: skip
_add(NcclVersion("2.23", "v2.23.4-1", **_OLD, pat_bw_factor=0.85, cites=_cites(
    "v2.23.4-1", base_lat=f"{_T}:56-59", hw_lat=f"{_T}:65-78", ll_max_bws=f"{_T}:86-90",
    per_ch_max_ring_ll128_bws=f"{_T}:92-96", per_ch_max_tree_ll128_bws=f"{_T}:97-101", per_ch_max_tree_bws=f"{_T}:102-106",
    pat=f"{_T}:109-116 (ncclPatEnable, no SM check)", compcap_index=f"{_T}:146", nvls_bw=f"{_T}:182",
    pat_bw_factor=f"{_T}:193", inter_lat_tree_at_ppn1=f"{_T}:236", legacy_inter_steps=f"{_T}:258",
    pat_base_lat_us=f"{_T}:278", ll128_compcaps=f"{_T}:330-334", nvls_ag_rs_arity=f"{_E}:1794-1797 (no arity check)",
)))  # fmt: skip
_add(replace(VERSIONS["2.23"], name="2.24", tag="v2.24.3-1", pat_bw_factor=0.75, cites=_cites(
    "v2.24.3-1", base_lat=f"{_T}:120-123", hw_lat=f"{_T}:129-142", ll_max_bws=f"{_T}:150-154",
    per_ch_max_ring_ll128_bws=f"{_T}:156-160", per_ch_max_tree_ll128_bws=f"{_T}:161-165", per_ch_max_tree_bws=f"{_T}:166-170",
    pat=f"{_T}:173-180", compcap_index=f"{_T}:210", nvls_bw=f"{_T}:245", pat_bw_factor=f"{_T}:256",
    inter_lat_tree_at_ppn1=f"{_T}:295", pat_base_lat_us=f"{_T}:337", ll128_compcaps=f"{_T}:426-430",
    nvls_ag_rs_arity=f"{_E}:1597-1600 (no arity check)",
)))  # fmt: skip
_add(replace(VERSIONS["2.24"], name="2.25", tag="v2.25.1-1", **_BW2X, ll128_compcaps=_LL128_SMS_25, nvls_ag_rs_arity=True, cites=_cites(
    "v2.25.1-1", base_lat=f"{_T}:120-123", hw_lat=f"{_T}:129-142", ll_max_bws=f"{_T}:151-156",
    per_ch_max_ring_ll128_bws=f"{_T}:158-163", per_ch_max_tree_ll128_bws=f"{_T}:164-169", per_ch_max_tree_bws=f"{_T}:170-175",
    pat=f"{_T}:178-185", compcap_index=f"{_T}:215", nvls_bw=f"{_T}:250", pat_bw_factor=f"{_T}:261",
    inter_lat_tree_at_ppn1=f"{_T}:300", pat_base_lat_us=f"{_T}:342", ll128_compcaps=f"{_T}:431-437",
    nvls_ag_rs_arity=f"{_E}:1610 (nRanks > NCCL_MAX_NVLS_ARITY)",
)))  # fmt: skip
_add(replace(VERSIONS["2.25"], name="2.26", tag="v2.26.6-1", pat_min_cc=60, also=("2.26.2", "2.26.3", "2.26.5"), cites=_cites(
    "v2.26.6-1 (tuning.cc identical in v2.26.2-1; v2.26.3-1 and v2.26.5-1 identical to v2.26.6-1 in tuning.cc, enqueue.cc and src/graph)", base_lat=f"{_T}:120-123", hw_lat=f"{_T}:129-142", ll_max_bws=f"{_T}:151-156",
    per_ch_max_ring_ll128_bws=f"{_T}:158-163", per_ch_max_tree_ll128_bws=f"{_T}:164-169", per_ch_max_tree_bws=f"{_T}:170-175",
    pat_min_cc=f"{_T}:180", compcap_index=f"{_T}:216", nvls_bw=f"{_T}:251", pat_bw_factor=f"{_T}:262",
    inter_lat_tree_at_ppn1=f"{_T}:301", pat_base_lat_us=f"{_T}:343", ll128_compcaps=f"{_T}:432-438",
    nvls_ag_rs_arity=f"{_E}:1689 (nRanks > NCCL_MAX_NVLS_ARITY)",
)))  # fmt: skip
_add(NcclVersion(
    "2.27", "v2.27.7-1", base_lat=_BASE_LAT, hw_lat=_HW_LAT, ll_max_bws=_BW2X["ll_max_bws"],
    per_ch_max_ring_ll128_bws=(*_RING_LL128, (34.5, 34.6, 34.5)), per_ch_max_tree_ll128_bws=_TREE_LL128_B, per_ch_max_tree_bws=_TREE_B,
    also=("2.27.5", "2.27.6", "2.27.7"), cites=_cites(
        "v2.27.7-1 (tuning.cc identical in v2.27.5-1 and v2.27.6-1; v2.27.6-1 differs only in enqueue.cc's kernel-attribute error"
        " handling, v2.27.5-1 also in search.cc's sm100 inter speeds and paths.cc's PXN rule, which the presets' fixed graphs do not read)", base_lat=f"{_T}:134-137", hw_lat=f"{_T}:143-156", ll_max_bws=f"{_T}:165-170",
        per_ch_max_ring_ll128_bws="v2.29.2-1 src/graph/tuning.cc:175-180 (Blackwell row; v2.27.7-1 lines 172-177 otherwise)",
        per_ch_max_tree_ll128_bws="v2.29.2-1 src/graph/tuning.cc:181-186 (Blackwell row; v2.27.7-1 lines 178-183 otherwise)",
        per_ch_max_tree_bws="v2.29.2-1 src/graph/tuning.cc:187-192 (Blackwell row; v2.27.7-1 lines 184-189 otherwise)",
        pat=f"{_T}:192-199", compcap_index=f"{_T}:232", nvls_bw=f"{_T}:267-274", pat_bw_factor=f"{_T}:285",
        inter_lat_tree_at_ppn1=f"{_T}:332", pat_base_lat_us=f"{_T}:374", ll128_compcaps=f"{_T}:470",
        nvls_ag_rs_arity=f"{_E}:1768 (localRanks > NCCL_MAX_NVLS_ARITY)",
    ),
))  # fmt: skip
_add(NcclVersion(
    "2.28", "v2.28.9-1", **_V228, per_ch_max_ring_ll128_bws=(*_RING_LL128, (2 * 36.7, 34.6, 2 * 36.7)), cites=_cites(
        "v2.28.9-1", nvls_efficiency=f"{_T}:134-139", base_lat=f"{_T}:143-148", hw_lat=f"{_T}:149-168", ll_max_bws=f"{_T}:169-174",
        per_ch_max_ring_ll128_bws=f"{_T}:175-180", per_ch_max_tree_ll128_bws=f"{_T}:181-186", per_ch_max_tree_bws=f"{_T}:187-192",
        per_ch_max_nvls_tree_bws=f"{_T}:193-198", nvls_bw=f"{_T}:285-300 (nChannels >= 2; efficiency)",
        nvls_ratio=f"{_T}:348 (nRanks / nsteps)", pat_base_lat_us=f"{_T}:147 (baseLat PAT row) and 396-399",
        nvls_ag_rs_arity=f"{_E}:1802",
    ),
))  # fmt: skip
_add(replace(VERSIONS["2.28"], name="2.29", tag="v2.29.7-1", per_ch_max_ring_ll128_bws=(*_RING_LL128, (40.0, 40.0, 40.0)),
             nvls_tree_correction=True, cites=_cites(
    "v2.29.7-1", nvls_efficiency=f"{_T}:135-140", base_lat=f"{_T}:144-149", hw_lat=f"{_T}:150-169", ll_max_bws=f"{_T}:170-175",
    per_ch_max_ring_ll128_bws=f"{_T}:176-181", per_ch_max_tree_ll128_bws=f"{_T}:182-187", per_ch_max_tree_bws=f"{_T}:188-193",
    per_ch_max_nvls_tree_bws=f"{_T}:194-199", nvls_bw=f"{_T}:286-301", nvls_ratio=f"{_T}:349",
    nvls_tree_correction=f"{_T}:581-585 (24 factors), 596", nvls_ag_rs_arity=f"{_E}:1914",
)))  # fmt: skip
_add(replace(VERSIONS["2.29"], name="2.29.3", tag="v2.29.3-1", per_ch_max_ring_ll128_bws=(*_RING_LL128, (34.5, 34.6, 34.5)),
             also=("2.29.2",), cites=_cites(
    "v2.29.3-1 (tuning.cc identical in v2.29.2-1)", per_ch_max_ring_ll128_bws=f"{_T}:175-180",
    nvls_tree_correction=f"{_T}:580-584, 595", nvls_bw=f"{_T}:285-300",
)))  # fmt: skip

DEFAULT = "2.27"


def known_versions() -> list[str]:
    """Every name --nccl-version takes (release lines, then patches whose tuning.cc differs)."""
    return [name for record in VERSIONS.values() for name in (record.name, *record.also)]


def nccl_version(name: str | None = None) -> NcclVersion:
    """The record of ``name`` ("2.19" ... "2.29", "v2.26.2-1"...; None: the default, 2.27)."""
    if name is None or str(name).strip() == "":
        return VERSIONS[DEFAULT]
    key = str(name).strip().lower().removeprefix("v").split("+")[0].removesuffix("-1")
    for record in VERSIONS.values():
        if key in (record.name, record.tag[1:].removesuffix("-1"), *record.also):  # the line, its tag's release, other patches
            return record
    raise CollsimError(
        f"nccl_version: unknown NCCL version {name!r}; known: {', '.join(known_versions())} (default {DEFAULT}: v2.27.7-1)",
        field="nccl_version",
    )
