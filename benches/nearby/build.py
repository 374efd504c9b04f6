"""Sealed evaluation set "nearby" for the activity-recommendation ranker.

Written queries-first on 2026-12-03 by an author who read no ranking code and
no other set (nothing in the repository outside benches/nearby/ was opened).

What it measures
  1. place_time  - nearer and sooner: inside the user's radius, an activity that
                   is nearer and starts sooner should beat an equally good one
                   far away or weeks out.
  2. different   - variety: the first results should not be near-copies (one
                   organiser's weekly series, one venue's repeated sessions);
                   the wish also names what the user is tired of.
  3. not_for_me  - the user turned activities down (feedback satisfied:false,
                   field turnedDown) and/or states dislikes; those activities,
                   their close look-alikes and anything matching a dislike must
                   not be near the top.

Kinds and counts
  50 queries: 20 place_time, 15 different, 15 not_for_me.
  Split (fixed in the QUERIES table, no randomness):
    tune    25 = 10 place_time + 8 different + 7 not_for_me
    holdout 25 = 10 place_time + 7 different + 8 not_for_me
  202 activities (124 singletons + 78 members of 21 series of 3-5 near-copies:
  one organiser's weekly class, one venue's repeated session), real Shanghai
  places, startAt 2026-12-04 .. 2027-01-02 (UTC, "Z"); 2 are cancelled and 1
  is already full (decoys).  series.jsonl lists the 78 series members;
  singletons are absent from it.

Reference "now"
  2026-12-04T04:00:00Z (Friday 12:00 Asia/Shanghai) for most queries; five
  queries ask at another moment (their own "now" field): n10 Fri 17:30,
  n14 Sun 12-06 20:00, n19 Fri 12-11 12:00, n12 Fri 12-18 18:00,
  f15 Mon 12-07 12:00 (all Shanghai time).

How grades were assigned (mechanically, by grade() below)
  Every activity carries hidden facets: a fine-grained kind (e.g. jazz,
  bar_party, run_club), attributes (outdoor, loud, alcohol, kids, english,
  free, intense ...), derived attributes (night = starts >= 18:00 local,
  morning = before 09:00, afternoon = 12:00-18:00, crowded = maxParticipants
  >= 100, at_museum = held at a museum), a place with coordinates and a start
  time.  A query's position is its named place, or an explicit `at` point a
  few hundred metres away (chosen so that no grade sits on a threshold).
  Each query is a rule over those facets:
    - not relevant (no grade) if: not active or already full; starts at or
      before the query's now; haversine distance > radiusKm; it is in
      turnedDown; it is a look-alike of a turned-down activity (same kind, or
      same series); it matches a stated dislike or something the wish says to
      avoid; it matches neither the query's "full" nor "partial" facet rule.
    - fit  = 2 if it matches a "full" rule, 1 if only a "partial" rule.
    - place = 2 if distance <= radiusKm / 2, else 1.
    - time = queries with an explicit time window: 2 inside the window.
      A window shorter than a day ("tonight", "tomorrow morning") is strict:
      outside it, no grade.  A longer window ("this weekend", "next week")
      gives 1 between now and the window start, or after the window up to
      end + grace (grace = the window's length, at most 7 days); later: no
      grade.  Queries without a time: 2 if it starts within 7 days of now,
      else 1 (weeks away).
    - grade = min(fit, place, time).
  Series members are graded like any other activity (the evaluator counts
  distinct series in a top 10 from series.jsonl; a singleton is its own
  series). build.py refuses to write if any grade would change when the
  distance moves by 0.15 km or the start time by 30 minutes, so small
  differences in distance formula or clock handling cannot flip a grade.

Run: python3 benches/nearby/build.py
     (python3 benches/nearby/build.py --explain n01   shows one query's grading)
"""

import hashlib
import json
import math
import os
import random
import sys
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
SHANGHAI = timezone(timedelta(hours=8))
NOW = "2026-12-04T04:00:00Z"          # Friday 12:00 in Shanghai
# Explicit time windows.  A window shorter than a day ("tonight", "tomorrow
# morning", "Sunday afternoon") is strict: outside it, no grade.  A longer
# window ("this weekend", "next week", "mid-December") has a grace period as
# long as the window itself (at most 7 days): an activity outside the window
# but before its end + grace (or between now and the window start) gets 1.
GRACE_MIN, GRACE_MAX = timedelta(days=1), timedelta(days=7)
SOON = timedelta(days=7)              # no explicit time: grade 2 if this soon
EARTH_KM = 6371.0088
DIST_MARGIN = 0.15                    # km a grade must survive (see margin_problems)
TIME_MARGIN = timedelta(minutes=30)

# --------------------------------------------------------------------------
# Kind groups (facet vocabulary used by the query rules)
# --------------------------------------------------------------------------
SPORT = {"run_club", "cycling", "climbing", "yoga", "frisbee", "ball",
         "hiking", "skate", "dance", "taichi"}
MUSIC = {"jazz", "classical", "acoustic", "livehouse"}
CRAFT = {"pottery", "painting", "handcraft", "cooking", "coffee_tea"}
CLASSES = CRAFT | {"dance", "climbing", "skate"}
SOCIAL_MEET = {"language_exchange", "boardgame", "murder_mystery", "dance",
               "comedy", "citywalk", "book_club", "wine_tasting", "frisbee",
               "market", "pets", "cooking", "volunteer"}
QUIET_KINDS = {"book_club", "coffee_tea", "exhibition", "meditation",
               "pottery", "painting", "handcraft", "classical"}
RELAX = {"meditation", "coffee_tea", "classical", "book_club", "acoustic",
         "pottery", "taichi"}


def R(kinds=None, attrs=(), no_attrs=(), not_kinds=()):
    """A facet rule: kind in kinds (None = any kind) and not in not_kinds,
    has all attrs, has none of no_attrs."""
    return {"kinds": set(kinds) if kinds is not None else None,
            "not_kinds": set(not_kinds), "attrs": set(attrs), "no_attrs": set(no_attrs)}


def D(text=None, kinds=(), attrs=(), lacks=()):
    """A dislike / avoid: excludes activities of these kinds, with any of these
    attrs, or lacking any of the `lacks` attrs. text=None: stated in the wish
    itself (not written to the dislikes field)."""
    return {"text": text, "kinds": set(kinds), "attrs": set(attrs), "lacks": set(lacks)}


ADULT = R(no_attrs={"kids_only"})   # any activity not aimed at children only

TONIGHT = ("12-04 17:00", "12-05 03:00")
WEEKEND = ("12-05 00:00", "12-07 00:00")

# --------------------------------------------------------------------------
# 1. QUERIES  (written first; activities were written afterwards to answer
#    and to decoy them).  Activity references use stable keys; a series
#    member is "<series>#<k>" (k = 1-based position in the series).
# --------------------------------------------------------------------------
QUERIES = [
    # ---------------- place_time ----------------
    dict(id="n01", kind="place_time", split="tune",
         query="今晚在静安附近找个能坐下来听音乐的地方",
         near="jingan_temple", radius=8, window=TONIGHT,
         full=[R({"jazz", "classical", "acoustic"})], partial=[R({"livehouse"})]),
    dict(id="n02", kind="place_time", split="holdout",
         query="这周末徐汇有什么适合带孩子的",
         near="xujiahui", radius=10, window=WEEKEND,
         full=[R(attrs={"kids"})]),
    dict(id="n03", kind="place_time", split="tune",
         query="明天早上想在徐汇滨江跑个步，有跑团吗",
         near="westbund", at=(31.179, 121.4595), radius=6, window=("12-05 05:00", "12-05 11:00"),
         full=[R({"run_club"})]),
    dict(id="n04", kind="place_time", split="holdout",
         query="下周末想在陆家嘴附近看个展",
         near="lujiazui", at=(31.239, 121.503), radius=8, window=("12-12 00:00", "12-14 00:00"),
         full=[R({"exhibition"})], partial=[R({"lecture", "photo_walk"})]),
    dict(id="n05", kind="place_time", split="tune",
         query="五角场附近最近有什么读书会或者讲座吗",
         near="wujiaochang", radius=6,
         full=[R({"book_club", "lecture"})], partial=[R({"exhibition"})]),
    dict(id="n06", kind="place_time", split="holdout",
         query="今晚想在新天地附近找个安静点的地方喝一杯",
         near="xintiandi", radius=5, window=TONIGHT,
         full=[R({"wine_tasting", "jazz"})], avoid=[D(attrs={"loud"})]),
    dict(id="n07", kind="place_time", split="tune",
         query="周日下午想在前滩上个瑜伽或者冥想课",
         near="qiantan", radius=8, window=("12-06 12:00", "12-06 18:00"),
         full=[R({"yoga", "meditation"})]),
    dict(id="n08", kind="place_time", split="holdout",
         query="古北のあたりで、日本語で参加できる交流イベントを探しています",
         near="gubei", radius=8,
         full=[R({"language_exchange"}, attrs={"japanese"})],
         partial=[R(attrs={"japanese"})]),
    dict(id="n09", kind="place_time", split="tune",
         query="Anything English-friendly near Jing'an this weekend? I'd like to meet people.",
         near="jingan_temple", radius=8, window=WEEKEND,
         full=[R(SOCIAL_MEET, attrs={"english"})], partial=[R(attrs={"english"})]),
    dict(id="n10", kind="place_time", split="holdout",
         query="刚下班，今晚或者明晚想在张江附近运动一下",
         near="zhangjiang", at=(31.203, 121.587), radius=8, now="2026-12-04T09:30:00Z",
         window=("12-04 17:30", "12-06 00:00"),
         full=[R(SPORT)]),
    dict(id="n11", kind="place_time", split="tune",
         query="这周末想在北外滩附近拍拍照，有没有摄影活动",
         near="north_bund", radius=6, window=WEEKEND,
         full=[R({"photo_walk"})], partial=[R({"citywalk"})]),
    dict(id="n12", kind="place_time", split="holdout",
         query="这周末中山公园附近想玩飞盘",
         near="zhongshan_park", radius=6, now="2026-12-18T10:00:00Z",
         window=("12-19 00:00", "12-21 00:00"),
         full=[R({"frisbee"})], partial=[R({"ball"})]),
    dict(id="n13", kind="place_time", split="tune",
         query="世纪公园附近有什么适合带娃的活动",
         near="century_park", at=(31.218, 121.55), radius=8,
         full=[R(attrs={"kids"})],
         dislikes=[D("不想去人挤人的地方", attrs={"crowded"})]),
    dict(id="n14", kind="place_time", split="holdout",
         query="下周想在人民广场附近看场话剧或者脱口秀",
         near="peoples_sq", radius=6, now="2026-12-06T12:00:00Z",
         window=("12-07 00:00", "12-14 00:00"),
         full=[R({"theatre", "comedy"})], partial=[R({"film"})]),
    dict(id="n15", kind="place_time", split="tune",
         query="周末在虹桥这边想学做菜",
         near="hongqiao", radius=10, window=WEEKEND,
         full=[R({"cooking"})], partial=[R({"coffee_tea"})]),
    dict(id="n16", kind="place_time", split="holdout",
         query="西岸附近最近有什么美术馆的活动",
         near="westbund", radius=6,
         full=[R({"exhibition"}), R({"lecture"}, attrs={"at_museum"})],
         partial=[R({"lecture", "painting"})]),
    dict(id="n17", kind="place_time", split="tune",
         query="周末想在杨浦滨江一带骑骑车",
         near="yangpu_binjiang", radius=15, window=WEEKEND,
         full=[R({"cycling"})]),
    dict(id="n18", kind="place_time", split="holdout",
         query="今晚静安附近有 livehouse 吗？想听点燥的",
         near="jingan_temple", radius=10, window=TONIGHT,
         full=[R({"livehouse"})], partial=[R({"bar_party"})]),
    dict(id="n19", kind="place_time", split="tune",
         query="这周末徐家汇附近有桌游局吗",
         near="xujiahui", radius=8, now="2026-12-11T04:00:00Z",
         window=("12-12 00:00", "12-14 00:00"),
         full=[R({"boardgame"})], partial=[R({"murder_mystery"})]),
    dict(id="n20", kind="place_time", split="holdout",
         query="12月中旬想在陆家嘴附近听场古典音乐会",
         near="lujiazui", at=(31.239, 121.503), radius=12, window=("12-14 00:00", "12-21 00:00"),
         full=[R({"classical"})]),

    # ---------------- different ----------------
    dict(id="d01", kind="different", split="tune",
         query="来点不一样的，别老是跑步",
         near="westbund", at=(31.18, 121.4595), radius=8,
         full=[R(SPORT - {"run_club"})], partial=[R({"citywalk", "photo_walk"})],
         avoid=[D(kinds={"run_club"})]),
    dict(id="d02", kind="different", split="holdout",
         query="平时周末都泡酒吧，这周末想换换口味，有什么新鲜的",
         near="xintiandi", at=(31.2201, 121.4717), radius=5, window=WEEKEND,
         full=[R(CRAFT | {"exhibition", "lecture", "book_club", "film", "theatre",
                          "citywalk", "photo_walk", "climbing", "dance", "skate",
                          "comedy", "classical", "acoustic"})],
         avoid=[D(kinds={"bar_party", "wine_tasting"})]),
    dict(id="d03", kind="different", split="tune",
         query="这周末在静安，想多看几种不同的活动，别全是一个类型",
         near="jingan_temple", at=(31.2285, 121.4446), radius=5, window=WEEKEND,
         full=[ADULT]),
    dict(id="d04", kind="different", split="holdout",
         query="桌游玩腻了，这周末想试试别的室内活动",
         near="xujiahui", radius=5, window=WEEKEND,
         full=[R(None, attrs={"indoor"}, no_attrs={"kids_only"}, not_kinds={"murder_mystery"})],
         partial=[R({"murder_mystery"})],   # tabletop again: only partly new
         avoid=[D(kinds={"boardgame"})]),
    dict(id="d05", kind="different", split="tune",
         query="最近总去看展，想换点能动手的",
         near="xintiandi", at=(31.2211, 121.4737), radius=6,
         full=[R(CRAFT)], partial=[R({"photo_walk"})],
         avoid=[D(kinds={"exhibition"})]),
    dict(id="d06", kind="different", split="holdout",
         query="Something different this weekend around Lujiazui - not another bar night.",
         near="lujiazui", at=(31.2415, 121.5055), radius=8, window=WEEKEND,
         full=[ADULT], avoid=[D(kinds={"bar_party"})]),
    dict(id="d07", kind="different", split="tune",
         query="每周都跑陆家嘴滨江夜跑，这周想来点新鲜的运动",
         near="lujiazui", at=(31.238, 121.5015), radius=10, window=("now", "12-07 00:00"),
         full=[R(SPORT - {"run_club"})],
         avoid=[D(kinds={"run_club"})],
         dislikes=[D("膝盖不好，不想攀岩爬高", kinds={"climbing"})]),
    dict(id="d08", kind="different", split="holdout",
         query="五角场附近有什么有意思的？最好别是读书会那种",
         near="wujiaochang", radius=6,
         full=[ADULT], avoid=[D(kinds={"book_club"})]),
    dict(id="d09", kind="different", split="tune",
         query="周末带孩子，公园去腻了，有没有室内的新鲜玩法",
         near="century_park", radius=10, window=WEEKEND,
         full=[R(attrs={"kids", "indoor"})], partial=[R(attrs={"kids"})],
         avoid=[D(kinds={"kids_nature"})]),
    dict(id="d10", kind="different", split="holdout",
         query="住古北，日语交流会去腻了，想认识人但换个形式",
         near="gubei", at=(31.199, 121.399), radius=7,
         full=[R(SOCIAL_MEET - {"language_exchange"})],
         avoid=[D(kinds={"language_exchange"})]),
    dict(id="d11", kind="different", split="tune",
         query="这周末想尝试点从没玩过的，北外滩虹口一带",
         near="north_bund", at=(31.2535, 121.5015), radius=8, window=WEEKEND,
         full=[ADULT]),
    dict(id="d12", kind="different", split="holdout",
         query="电影看腻了，今晚中山公园附近还有什么可去的",
         near="zhongshan_park", at=(31.222, 121.413), radius=8, window=TONIGHT,
         full=[ADULT], avoid=[D(kinds={"film"})]),
    dict(id="d13", kind="different", split="tune",
         query="总是一个人在家画画，这周末想出门换换，最好是户外的",
         near="jingan_temple", at=(31.2235, 121.4471), radius=10, window=WEEKEND,
         full=[R(None, attrs={"outdoor"}, no_attrs={"kids_only"})],
         avoid=[D(kinds={"painting"})]),
    dict(id="d14", kind="different", split="holdout",
         query="每周都上同一个瑜伽课，有没有别的放松方式",
         near="qiantan", at=(31.1555, 121.475), radius=10,
         full=[R(RELAX)], partial=[R({"citywalk", "exhibition"})],
         avoid=[D(kinds={"yoga"})]),
    dict(id="d15", kind="different", split="tune",
         query="周末张江附近，除了攀岩还有什么好玩的",
         near="zhangjiang", at=(31.2015, 121.588), radius=10, window=WEEKEND,
         full=[ADULT], avoid=[D(kinds={"climbing"})]),

    # ---------------- not_for_me ----------------
    dict(id="f01", kind="not_for_me", split="tune",
         query="周末想出去玩",
         near="xintiandi", at=(31.2211, 121.4737), radius=6, window=WEEKEND,
         full=[ADULT],
         turned=["xintiandi-party#1", "bund-rooftop-party"]),
    dict(id="f02", kind="not_for_me", split="holdout",
         query="今晚有什么活动推荐",
         near="jingan_temple", radius=7, window=TONIGHT,
         full=[ADULT],
         turned=["yuyintang-live#1"],
         dislikes=[D("不喜欢太吵的地方", attrs={"loud"})]),
    dict(id="f03", kind="not_for_me", split="tune",
         query="想运动一下",
         near="xujiahui", at=(31.1935, 121.438), radius=8,
         full=[R(SPORT)],
         turned=["binjiang-run#1", "xujiahui-park-run"],
         dislikes=[D("不想早起", attrs={"morning"})]),
    dict(id="f04", kind="not_for_me", split="holdout",
         query="周末带孩子去哪儿",
         near="century_park", radius=10, window=WEEKEND,
         full=[R(attrs={"kids"})],
         turned=["century-nature#1"],
         dislikes=[D("孩子对做手工没兴趣", kinds={"pottery", "kids_craft", "handcraft", "painting"})]),
    dict(id="f05", kind="not_for_me", split="tune",
         query="有没有适合认识新朋友的活动",
         near="jingan_temple", radius=8,
         full=[R(SOCIAL_MEET)],
         turned=["jingan-english#2"],
         dislikes=[D("我不喝酒", attrs={"alcohol"})]),
    dict(id="f06", kind="not_for_me", split="holdout",
         query="想找个周末的兴趣课",
         near="westbund", radius=8, window=WEEKEND,
         full=[R(CLASSES)],
         turned=["westbund-pottery#1"]),
    dict(id="f07", kind="not_for_me", split="tune",
         query="下周想去听现场音乐",
         near="peoples_sq", radius=10, window=("12-07 00:00", "12-14 00:00"),
         full=[R(MUSIC)],
         turned=["concert-hall-winter"],
         dislikes=[D("爵士听不太懂", kinds={"jazz"})]),
    dict(id="f08", kind="not_for_me", split="holdout",
         query="周末想出门走走",
         near="north_bund", radius=8, window=WEEKEND,
         full=[R(None, attrs={"outdoor"}, no_attrs={"kids_only", "intense"})],
         dislikes=[D("人太多的地方不去", attrs={"crowded"}),
                   D("不想花钱", lacks={"free"})]),
    dict(id="f09", kind="not_for_me", split="tune",
         query="今晚下班后想放松一下",
         near="lujiazui", at=(31.2415, 121.5055), radius=8, window=TONIGHT,
         full=[ADULT],
         turned=["lujiazui-run#1"],
         dislikes=[D("不想出汗", kinds=SPORT)]),
    dict(id="f10", kind="not_for_me", split="holdout",
         query="周末有什么好玩的",
         near="wujiaochang", radius=6, window=WEEKEND,
         full=[ADULT],
         turned=["daxue-improv#1"],
         dislikes=[D("不喜欢要上台互动的", attrs={"audience_participation"})]),
    dict(id="f11", kind="not_for_me", split="tune",
         query="最近想学点新东西",
         near="xujiahui", at=(31.1935, 121.438), radius=8,
         full=[R(CLASSES | {"language_exchange", "photo_walk"})],
         turned=["hongqiao-cooking#1", "xujiahui-western"],
         dislikes=[D("不想坐着听讲座", kinds={"lecture"})]),
    dict(id="f12", kind="not_for_me", split="holdout",
         query="想找个安静的地方待一下午",
         near="xintiandi", at=(31.2211, 121.4737), radius=6,
         full=[R(QUIET_KINDS, attrs={"afternoon"})], partial=[R(QUIET_KINDS)],
         turned=["sinan-chamber#1"]),
    dict(id="f13", kind="not_for_me", split="tune",
         query="週末、古北の近くで何か面白いイベントありますか？",
         near="gubei", at=(31.199, 121.399), radius=7, window=WEEKEND,
         full=[ADULT],
         turned=["gubei-nihongo#1"],
         dislikes=[D("お酒の場は苦手です", attrs={"alcohol"})]),
    dict(id="f14", kind="not_for_me", split="holdout",
         query="周末想去户外走走",
         near="zhongshan_park", radius=20, window=WEEKEND,
         full=[R(None, attrs={"outdoor"}, no_attrs={"kids_only"})],
         turned=["zhongshan-frisbee#1"],
         dislikes=[D("不想太累", attrs={"intense"})]),
    dict(id="f15", kind="not_for_me", split="holdout",
         query="这周下班后有什么可以去的",
         near="zhangjiang", at=(31.2015, 121.588), radius=10, now="2026-12-07T04:00:00Z",
         window=("12-07 17:00", "12-12 00:00"),
         full=[R(None, attrs={"night"}, no_attrs={"kids_only"})],
         turned=["zhangjiang-climb#2"],
         dislikes=[D("不喜欢剧本杀、桌游这种烧脑的", kinds={"murder_mystery", "boardgame"})]),
]

# --------------------------------------------------------------------------
# 2. PLACES  (real Shanghai places, approximate WGS84 coordinates)
#    key: (locationName, lat, lng, is_museum)
# --------------------------------------------------------------------------
PLACES = {
    "jingan_temple":     ("静安寺", 31.2235, 121.4456, False),
    "julu_rd":           ("巨鹿路", 31.2218, 121.4570, False),
    "yuyuan_rd":         ("愚园路", 31.2225, 121.4330, False),
    "kerry_jingan":      ("静安嘉里中心", 31.2250, 121.4510, False),
    "taikoo_hui":        ("兴业太古汇", 31.2310, 121.4560, False),
    "yuyintang":         ("育音堂（凯旋路）", 31.2135, 121.4195, False),
    "shangsheng":        ("上生·新所", 31.2060, 121.4260, False),
    "wukang":            ("武康大楼", 31.2053, 121.4369, False),
    "anfu_rd":           ("安福路", 31.2140, 121.4450, False),
    "symphony_hall":     ("上海交响乐团音乐厅", 31.2110, 121.4470, False),
    "xujiahui":          ("徐家汇美罗城", 31.1935, 121.4375, False),
    "ganghui":           ("港汇恒隆广场", 31.1950, 121.4350, False),
    "xujiahui_park":     ("徐家汇公园", 31.1990, 121.4410, False),
    "xujiahui_library":  ("徐家汇书院", 31.1950, 121.4390, False),
    "longhua":           ("龙华寺", 31.1780, 121.4450, False),
    "stadium":           ("上海体育场", 31.1830, 121.4370, False),
    "caohejing":         ("漕河泾开发区", 31.1700, 121.3970, False),
    "westbund":          ("徐汇滨江·西岸", 31.1780, 121.4600, False),
    "westbund_museum":   ("西岸美术馆", 31.1726, 121.4606, True),
    "long_museum":       ("龙美术馆（西岸馆）", 31.1745, 121.4620, True),
    "westbund_dream":    ("西岸梦中心", 31.1690, 121.4660, False),
    "expo_park":         ("世博文化公园", 31.1880, 121.4760, False),
    "china_art":         ("中华艺术宫", 31.1860, 121.4940, True),
    "qiantan":           ("前滩太古里", 31.1530, 121.4750, False),
    "qiantan_park":      ("前滩休闲公园", 31.1480, 121.4820, False),
    "botanical":         ("上海植物园", 31.1450, 121.4450, False),
    "xintiandi":         ("新天地", 31.2196, 121.4747, False),
    "sinan":             ("思南公馆", 31.2150, 121.4680, False),
    "tianzifang":        ("田子坊", 31.2089, 121.4690, False),
    "laomatou":          ("老码头", 31.2170, 121.5010, False),
    "peoples_sq":        ("人民广场", 31.2317, 121.4726, False),
    "grand_theatre":     ("上海大剧院", 31.2310, 121.4700, False),
    "concert_hall":      ("上海音乐厅", 31.2270, 121.4780, False),
    "sh_museum":         ("上海博物馆（人民广场馆）", 31.2285, 121.4755, True),
    "bund":              ("外滩源", 31.2430, 121.4890, False),
    "lujiazui":          ("陆家嘴滨江", 31.2380, 121.5020, False),
    "pudong_museum":     ("浦东美术馆", 31.2405, 121.4950, True),
    "ifc":               ("国金中心 IFC", 31.2360, 121.5020, False),
    "dongchang":         ("东昌路", 31.2330, 121.5050, False),
    "science_museum":    ("上海科技馆", 31.2190, 121.5400, True),
    "century_park":      ("世纪公园", 31.2170, 121.5500, False),
    "oriental_art":      ("上海东方艺术中心", 31.2140, 121.5430, False),
    "pudong_library":    ("上海图书馆东馆", 31.2100, 121.5560, False),
    "zhangjiang":        ("张江科学城", 31.2030, 121.5880, False),
    "zj_science_hall":   ("张江科学会堂", 31.2160, 121.6000, False),
    "jinqiao":           ("金桥", 31.2640, 121.5830, False),
    "north_bund":        ("北外滩滨江", 31.2520, 121.4990, False),
    "laochangfang":      ("1933老场坊", 31.2570, 121.4910, False),
    "duolun":            ("多伦路文化名人街", 31.2660, 121.4830, False),
    "luxun_park":        ("鲁迅公园", 31.2720, 121.4830, False),
    "ruihong":           ("瑞虹天地", 31.2640, 121.5020, False),
    "m50":               ("M50创意园", 31.2500, 121.4470, False),
    "yangpu_binjiang":   ("杨浦滨江", 31.2580, 121.5240, False),
    "huangxing_park":    ("黄兴公园", 31.2870, 121.5340, False),
    "wujiaochang":       ("五角场", 31.3000, 121.5140, False),
    "daxue_rd":          ("大学路", 31.3060, 121.5090, False),
    "fudan":             ("复旦大学邯郸校区", 31.2990, 121.5030, False),
    "jiangwan":          ("江湾体育场", 31.3050, 121.5170, False),
    "gongqing":          ("共青森林公园", 31.3220, 121.5560, False),
    "zhongshan_park":    ("中山公园", 31.2220, 121.4170, False),
    "raffles_changning": ("长宁来福士", 31.2200, 121.4210, False),
    "changfeng":         ("长风公园", 31.2230, 121.3950, False),
    "ecnu":              ("华东师大中山北路校区", 31.2280, 121.4050, False),
    "tianshan":          ("天山路", 31.2120, 121.4000, False),
    "gubei":             ("古北黄金城道", 31.1990, 121.4010, False),
    "xianxia":           ("仙霞路", 31.2030, 121.3940, False),
    "zoo":               ("上海动物园", 31.1920, 121.3610, False),
    "hongqiao":          ("虹桥天地", 31.1935, 121.3160, False),
    "qibao":             ("七宝古镇", 31.1560, 121.3500, False),
    "sheshan":           ("佘山国家森林公园", 31.0960, 121.1930, False),
    "disney":            ("迪士尼小镇", 31.1430, 121.6580, False),
    "binjiang_forest":   ("滨江森林公园", 31.3870, 121.5060, False),
    "chongming":         ("崇明东平国家森林公园", 31.6790, 121.4650, False),
    "gucun":             ("顾村公园", 31.3530, 121.3780, False),
}

# --------------------------------------------------------------------------
# 3. KINDS: kind -> (type, base tags, default attrs)
# --------------------------------------------------------------------------
KINDS = {
    "run_club":          ("sports", ["跑步", "跑团"], "outdoor intense"),
    "cycling":           ("sports", ["骑行"], "outdoor intense"),
    "climbing":          ("sports", ["攀岩"], "indoor intense"),
    "yoga":              ("wellness", ["瑜伽"], "quiet"),
    "frisbee":           ("sports", ["飞盘", "团队运动"], "outdoor intense"),
    "ball":              ("sports", ["球类"], "indoor intense"),
    "hiking":            ("outdoor", ["徒步", "登山"], "outdoor intense"),
    "skate":             ("sports", ["滑板"], "outdoor"),
    "dance":             ("social", ["舞蹈"], "indoor"),
    "taichi":            ("wellness", ["太极"], "outdoor quiet"),
    "meditation":        ("wellness", ["冥想", "放松"], "indoor quiet"),
    "jazz":              ("music", ["爵士", "现场音乐"], "indoor seated"),
    "classical":         ("music", ["古典", "音乐会"], "indoor seated quiet"),
    "acoustic":          ("music", ["民谣", "现场音乐"], "indoor seated"),
    "livehouse":         ("music", ["Livehouse", "乐队", "现场音乐"], "indoor loud"),
    "bar_party":         ("nightlife", ["派对", "酒吧"], "indoor loud alcohol"),
    "wine_tasting":      ("nightlife", ["品鉴", "小酌"], "indoor seated alcohol"),
    "comedy":            ("culture", ["喜剧", "脱口秀"], "indoor seated"),
    "theatre":           ("culture", ["话剧", "剧场"], "indoor seated"),
    "film":              ("culture", ["电影", "放映"], "indoor seated quiet"),
    "exhibition":        ("culture", ["展览", "艺术"], "indoor quiet"),
    "lecture":           ("culture", ["讲座"], "indoor seated quiet"),
    "book_club":         ("culture", ["读书会", "阅读"], "indoor seated quiet"),
    "citywalk":          ("outdoor", ["citywalk", "城市漫步"], "outdoor"),
    "photo_walk":        ("outdoor", ["摄影"], "outdoor"),
    "stargazing":        ("outdoor", ["观星", "天文"], "outdoor quiet"),
    "pottery":           ("workshop", ["陶艺", "手作"], "indoor quiet"),
    "painting":          ("workshop", ["绘画"], "quiet"),
    "handcraft":         ("workshop", ["手作"], "indoor quiet"),
    "cooking":           ("workshop", ["料理", "美食"], "indoor"),
    "coffee_tea":        ("workshop", ["咖啡", "茶"], "indoor quiet"),
    "boardgame":         ("social", ["桌游"], "indoor seated"),
    "murder_mystery":    ("social", ["剧本杀", "推理"], "indoor seated"),
    "language_exchange": ("social", ["语言交换", "交友"], "indoor seated"),
    "kids_nature":       ("family", ["亲子", "自然教育"], "outdoor kids kids_only"),
    "kids_science":      ("family", ["亲子", "科学"], "indoor kids kids_only"),
    "kids_story":        ("family", ["亲子", "绘本"], "indoor kids kids_only quiet"),
    "kids_craft":        ("family", ["亲子", "手工"], "indoor kids kids_only"),
    "festival":          ("community", ["节庆"], "outdoor"),
    "market":            ("community", ["市集"], "outdoor"),
    "pets":              ("community", ["宠物"], "outdoor"),
    "volunteer":         ("community", ["志愿者", "公益"], "outdoor free"),
}

ATTR_TAGS = {"outdoor": "户外", "indoor": "室内", "kids": "亲子友好",
             "english": "English", "japanese": "日本語", "free": "免费",
             "alcohol": "含酒水", "quiet": "安静", "loud": "热闹",
             "audience_participation": "观众互动"}

# --------------------------------------------------------------------------
# 4. ACTIVITIES
# --------------------------------------------------------------------------
# Series: key, title template ({n} = issue number), description ({note} = per
# member note), kind, place, local start times, maxParticipants, extra attrs,
# first issue number, per-member notes, extra tags.
SERIES = [
    dict(key="binjiang-run", title="西岸滨江晨跑团 第{n}期",
         desc="每周六早上7:30在徐汇滨江龙腾大道集合，沿江慢跑5-8公里，配速6-7分钟，新手友好，跑完一起吃早餐。{note}",
         kind="run_club", place="westbund", max=40, attrs="free", first=31,
         dates=["12-05 07:30", "12-12 07:30", "12-19 07:30", "12-26 07:30", "01-02 07:30"],
         notes=["本期5公里轻松跑。", "本期8公里长距离。", "本期间歇跑体验。", "本期圣诞主题跑，欢迎穿圣诞装。", "本期新年第一跑。"],
         tags=["晨跑"]),
    dict(key="lujiazui-run", title="陆家嘴滨江夜跑 第{n}期",
         desc="周五下班后在陆家嘴滨江大道集合，沿黄浦江夜跑6公里，一路看外滩灯光，跑后集体拉伸。{note}",
         kind="run_club", place="lujiazui", max=50, attrs="free", first=58,
         dates=["12-04 19:30", "12-11 19:30", "12-18 19:30", "12-25 19:30"],
         notes=["", "本期加跑2公里。", "", "圣诞夜跑，终点有热可可。"], tags=["夜跑"]),
    dict(key="julu-jazz", title="巨鹿路爵士小馆·周末爵士夜 第{n}场",
         desc="巨鹿路老洋房里的小爵士酒馆，本地三重奏现场演出，有座位，可点酒水和无酒精饮品。{note}",
         kind="jazz", place="julu_rd", max=45, attrs="alcohol", first=101,
         dates=["12-04 21:00", "12-05 21:00", "12-11 21:00", "12-18 21:00"],
         notes=["今晚曲目以标准曲为主。", "今晚有女声加盟。", "今晚主题：Bossa Nova。", "今晚主题：圣诞爵士。"]),
    dict(key="yuyintang-live", title="育音堂周末现场：独立乐队拼盘 Vol.{n}",
         desc="老牌Livehouse育音堂的周末拼盘演出，四支本地独立乐队轮番登场，站票，音量大，现场很燥。{note}",
         kind="livehouse", place="yuyintang", max=150, attrs="alcohol", first=210,
         dates=["12-04 20:30", "12-05 20:30", "12-12 20:30"],
         notes=["本场偏后朋克。", "本场偏噪音摇滚。", "本场偏数学摇滚。"]),
    dict(key="xintiandi-party", title="新天地 Friday Night 派对 第{n}期",
         desc="新天地酒吧街的周五派对，DJ打碟到深夜，人多热闹，门票含一杯饮品。{note}",
         kind="bar_party", place="xintiandi", max=200, attrs="", first=7,
         dates=["12-04 21:30", "12-11 21:30", "12-18 21:30"],
         notes=["本期主题：复古迪斯科。", "本期主题：Hip-hop。", "本期主题：圣诞前夜热身。"], tags=["蹦迪"]),
    dict(key="wukang-walk", title="梧桐区漫步：武康路—安福路 citywalk 第{n}期",
         desc="从武康大楼出发，走武康路、安福路、五原路，讲解老洋房和名人故居，全程约3公里，慢慢走。{note}",
         kind="citywalk", place="wukang", max=25, attrs="", first=40,
         dates=["12-05 14:00", "12-06 14:00", "12-13 14:00", "12-20 14:00"],
         notes=["", "", "本期加一段五原路。", "本期冬日梧桐落叶特辑。"]),
    dict(key="meiluo-boardgame", title="徐家汇桌游之夜（每周三）第{n}期",
         desc="美罗城楼上桌游馆的固定局，德式策略和欢乐派对游戏都有，主持人带新手，一个人来也能拼桌。{note}",
         kind="boardgame", place="xujiahui", max=24, attrs="night", first=88,
         dates=["12-09 19:00", "12-16 19:00", "12-23 19:00"], notes=["", "", "圣诞特别场。"]),
    dict(key="westbund-pottery", title="西岸周末陶艺手作 第{n}期",
         desc="在西岸梦中心的陶艺工作室学拉坯和手捏，老师一对四指导，成品烧制后可寄送，大人小孩都能参加。{note}",
         kind="pottery", place="westbund_dream", max=12, attrs="kids", first=20,
         dates=["12-05 14:00", "12-06 14:00", "12-12 14:00", "12-19 14:00", "12-26 14:00"],
         notes=["本期做马克杯。", "本期做小碗。", "本期做花器。", "本期做圣诞小摆件。", "本期做年末小盘。"]),
    dict(key="gubei-nihongo", title="古北日本語交流会 第{n}回",
         desc="古北の喫茶店で開く中日ランゲージエクスチェンジ。日本語と中国語を半分ずつ、初心者も歓迎。古北咖啡馆里的中日语言交换，中日文各半，初学者也欢迎。{note}",
         kind="language_exchange", place="gubei", max=20, attrs="japanese", first=45,
         dates=["12-05 15:00", "12-10 19:30", "12-17 19:30", "12-24 19:30"],
         notes=["", "テーマ：冬の食べ物。", "テーマ：年末の過ごし方。", "クリスマス会。"]),
    dict(key="jingan-english", title="静安 English Corner 英语角 第{n}期",
         desc="在静安嘉里中心的咖啡馆用英语聊天交朋友，每期一个话题，外籍志愿者带桌。Practice English and make friends. {note}",
         kind="language_exchange", place="kerry_jingan", max=30, attrs="english", first=130,
         dates=["12-05 14:00", "12-08 19:00", "12-15 19:00", "12-22 19:00"],
         notes=["Topic: travel.", "Topic: food.", "Topic: movies.", "Topic: holidays."]),
    dict(key="century-nature", title="世纪公园亲子自然观察 第{n}期",
         desc="自然导师带3-10岁孩子在世纪公园认识冬季植物和鸟类，做自然笔记，需家长陪同。{note}",
         kind="kids_nature", place="century_park", max=15, attrs="", first=16,
         dates=["12-05 09:30", "12-06 09:30", "12-13 09:30", "12-20 09:30"],
         notes=["本期找松果。", "本期观鸟。", "本期认冬芽。", "本期做落叶拼贴。"]),
    dict(key="daxue-improv", title="大学路即兴喜剧 周六夜场 第{n}场",
         desc="大学路小剧场的即兴喜剧，演员根据观众给的词现场编故事，中场会邀请观众上台一起玩。{note}",
         kind="comedy", place="daxue_rd", max=60, attrs="audience_participation", first=64,
         dates=["12-05 20:00", "12-12 20:00", "12-19 20:00", "12-26 20:00"], notes=["", "", "", "年终特别场。"]),
    dict(key="daxue-bookclub", title="大学路读书会 第{n}期",
         desc="大学路独立书店的周日读书会，每期共读一本书，围坐讨论两小时。{note}",
         kind="book_club", place="daxue_rd", max=20, attrs="", first=77,
         dates=["12-06 14:30", "12-13 14:30", "12-20 14:30"],
         notes=["本期共读《额尔古纳河右岸》。", "本期共读《置身事内》。", "本期共读《始于极限》。"]),
    dict(key="sinan-chamber", title="思南公馆·周日下午室内乐 第{n}场",
         desc="思南公馆老洋房里的小型室内乐演出，弦乐四重奏，约一小时，适合安静地听。{note}",
         kind="classical", place="sinan", max=60, attrs="", first=12,
         dates=["12-06 15:00", "12-13 15:00", "12-20 15:00", "12-27 15:00"],
         notes=["曲目：海顿。", "曲目：莫扎特。", "曲目：德彪西。", "曲目：德沃夏克《美国》。"]),
    dict(key="qiantan-yoga", title="前滩晨间瑜伽 第{n}课",
         desc="周末早上八点在前滩太古里屋顶平台练哈他瑜伽，一小时，请自带瑜伽垫。{note}",
         kind="yoga", place="qiantan", max=25, attrs="outdoor", first=52,
         dates=["12-05 08:00", "12-06 08:00", "12-12 08:00", "12-13 08:00"], notes=["", "", "", ""]),
    dict(key="zhangjiang-climb", title="张江攀岩馆 新手体验课 第{n}期",
         desc="下班后来张江的室内攀岩馆，教练带新手学抱石基本动作，90分钟，提供攀岩鞋。{note}",
         kind="climbing", place="zhangjiang", max=16, attrs="", first=23,
         dates=["12-04 19:30", "12-08 19:30", "12-11 19:30", "12-15 19:30"], notes=["", "", "", ""]),
    dict(key="northbund-photo", title="北外滩夜景摄影漫步 第{n}期",
         desc="傍晚在北外滩滨江集合，摄影师带大家拍陆家嘴天际线和外白渡桥夜景，手机相机都可以，免费参加。{note}",
         kind="photo_walk", place="north_bund", max=20, attrs="free", first=9,
         dates=["12-05 18:30", "12-12 18:30", "12-19 18:30"], notes=["", "", ""], tags=["夜景"]),
    dict(key="zhongshan-frisbee", title="中山公园飞盘新手局 第{n}期",
         desc="在中山公园大草坪玩躲避飞盘和团队飞盘，教练教基本传盘，适合第一次玩。{note}",
         kind="frisbee", place="zhongshan_park", max=30, attrs="", first=33,
         dates=["12-05 14:00", "12-06 14:00", "12-13 14:00", "12-19 14:00"], notes=["", "", "", ""]),
    dict(key="hongqiao-cooking", title="虹桥天地 周末家常菜料理课 第{n}期",
         desc="虹桥天地的料理教室，每期学两道家常菜，老师示范后自己动手，做完一起吃。{note}",
         kind="cooking", place="hongqiao", max=12, attrs="", first=18,
         dates=["12-05 14:00", "12-12 14:00", "12-19 14:00"],
         notes=["本期：红烧肉和腌笃鲜。", "本期：糖醋小排和葱油拌面。", "本期：八宝鸭和蟹粉豆腐。"]),
    dict(key="yangpu-ride", title="杨浦滨江周日骑行 第{n}期",
         desc="周日早上从杨浦滨江国歌纪念广场出发，沿滨江绿道骑行20公里，可骑共享单车，节奏轻松。{note}",
         kind="cycling", place="yangpu_binjiang", max=30, attrs="", first=27,
         dates=["12-06 09:00", "12-13 09:00", "12-20 09:00"], notes=["", "", ""]),
    dict(key="tianzifang-jbs", title="田子坊剧本杀 新手车 第{n}车",
         desc="田子坊的剧本杀店，六人本格推理新手本，主持人全程带，约四小时。{note}",
         kind="murder_mystery", place="tianzifang", max=6, attrs="", first=5,
         dates=["12-05 19:00", "12-12 19:00", "12-19 19:00"], notes=["", "", ""]),
]


def S(key, title, desc, kind, place, when, max_p, attrs="", status="active", cur=None, tags=()):
    return dict(key=key, title=title, desc=desc, kind=kind, place=place, when=when,
                max=max_p, attrs=attrs, status=status, cur=cur, tags=list(tags))


SINGLES = [
    # ---- music ----
    S("yuyuan-folk", "愚园路·民谣弹唱之夜", "愚园路小酒馆里，三位独立音乐人轮流弹唱原创民谣，座位不多，点杯热饮安静地听。", "acoustic", "yuyuan_rd", "12-04 20:00", 40),
    S("concert-hall-winter", "上海音乐厅 冬日室内乐专场", "上海音乐厅南厅的室内乐专场，钢琴三重奏演绎勃拉姆斯与舒曼，对号入座。", "classical", "concert_hall", "12-04 19:30", 300),
    S("ifc-rooftop-jazz", "陆家嘴 IFC 屋顶爵士之夜", "国金中心屋顶酒吧的爵士现场，对面就是外滩夜景，有沙发座，提供鸡尾酒。", "jazz", "ifc", "12-04 20:30", 60, "alcohol"),
    S("oriental-art-classical", "东方艺术中心 12月古典之夜：柴可夫斯基", "上海东方艺术中心音乐厅，交响乐团演奏柴可夫斯基第五交响曲。", "classical", "oriental_art", "12-17 19:30", 500),
    S("taikoo-jazz-piano", "太古汇 爵士钢琴独奏夜", "兴业太古汇里的音乐酒廊，爵士钢琴独奏，年末最后一场，有座。", "jazz", "taikoo_hui", "12-30 20:00", 80, "alcohol"),
    S("ruihong-punk", "瑞虹天地 Livehouse 朋克之夜", "瑞虹天地的 Livehouse，三支朋克乐队连演，站场，很吵很燥。", "livehouse", "ruihong", "12-04 21:00", 200, "alcohol"),
    S("m50-electronic", "M50 地下电子现场", "M50创意园仓库改造的场地，本地电子音乐人现场演出到凌晨。", "livehouse", "m50", "12-04 22:00", 150, tags=["电子音乐"]),
    S("daxue-band", "大学路 Livehouse 学生乐队夜", "大学路的小型 Livehouse，几支高校乐队的原创专场，票价亲民。", "livehouse", "daxue_rd", "12-04 20:30", 120),
    S("pudong-museum-piano", "浦东美术馆 钢琴独奏会", "在浦东美术馆的江景大厅里听一场钢琴独奏，曲目为肖邦夜曲。", "classical", "pudong_museum", "12-16 19:30", 120),
    S("symphony-beethoven", "上交音乐厅 贝多芬之夜", "上海交响乐团音乐厅，贝多芬第七交响曲与《皇帝》协奏曲。", "classical", "symphony_hall", "12-19 19:30", 400),
    S("fudan-chamber", "复旦 室内乐沙龙", "复旦校园里的室内乐沙龙，学生乐手演奏，结束后可以和乐手聊天。", "classical", "fudan", "12-15 19:00", 80),
    S("zj-quartet", "张江科学会堂 弦乐四重奏", "张江科学会堂的周五音乐会，弦乐四重奏演奏贝多芬与肖斯塔科维奇。", "classical", "zj_science_hall", "12-18 19:30", 200),
    S("duolun-folk", "多伦路 民谣夜", "多伦路老房子里的民谣小场，两位音乐人弹唱，有座位。", "acoustic", "duolun", "12-10 20:00", 50),
    S("laomatou-rock", "老码头 Livehouse 摇滚夜", "老码头的 Livehouse，本地摇滚乐队专场，站票。", "livehouse", "laomatou", "12-11 21:00", 150, "alcohol"),
    S("ruihong-indie", "瑞虹天地 独立乐队专场", "瑞虹天地 Livehouse 的独立乐队专场，新专辑首演。", "livehouse", "ruihong", "12-12 20:30", 200, "alcohol"),
    S("ifc-thursday-jazz", "陆家嘴 周四爵士夜", "国金中心酒廊的周四爵士夜，萨克斯四重奏，有座位。", "jazz", "ifc", "12-10 20:30", 60, "alcohol"),
    S("jingan-jazz-cancelled", "静安 爵士四重奏 小型专场", "静安嘉里中心的小型爵士专场（因乐手行程取消）。", "jazz", "kerry_jingan", "12-04 20:00", 50, status="cancelled"),
    # ---- drinks / nightlife ----
    S("sinan-wine", "思南公馆 红酒品鉴小聚", "思南公馆里的小型红酒品鉴，侍酒师带大家喝六款勃艮第，十几个人围坐慢聊。", "wine_tasting", "sinan", "12-04 19:30", 20),
    S("bund-whisky", "外滩 威士忌品鉴会", "外滩源老建筑里的威士忌品鉴会，五款单一麦芽，安静的小酒廊。", "wine_tasting", "bund", "12-04 20:00", 24),
    S("tianzifang-craftbeer", "田子坊 精酿啤酒品鉴", "田子坊弄堂里的精酿酒吧，酿酒师讲解并品尝八款本地精酿。", "wine_tasting", "tianzifang", "12-05 20:00", 30),
    S("bund-rooftop-party", "外滩 屋顶派对 Rooftop Party", "外滩屋顶酒吧的周六大派对，两位DJ，人多热闹，建议早点到。", "bar_party", "bund", "12-05 22:00", 200),
    S("gubei-izakaya", "古北 居酒屋交流夜（飲み会）", "古北の居酒屋で中日の友達づくり飲み会。古北居酒屋的中日交友酒会，边喝边聊。", "wine_tasting", "gubei", "12-05 19:00", 30, "japanese"),
    # ---- comedy / theatre / film ----
    S("xintiandi-open-mic", "English Comedy Open Mic @ Xintiandi", "Stand-up open mic in English at a Xintiandi bar. Anyone can sign up for a 5-minute set. 新天地的英文脱口秀开放麦。", "comedy", "xintiandi", "12-05 20:30", 60, "english audience_participation"),
    S("grand-theatre-leiyu", "上海大剧院 话剧《雷雨》", "经典话剧《雷雨》新版，上海大剧院大剧场演出，时长约三小时。", "theatre", "grand_theatre", "12-10 19:30", 800),
    S("anfu-small-theatre", "安福路小剧场 新编话剧《弄堂》", "安福路话剧艺术中心的小剧场新戏，讲一条弄堂里三代人的故事。", "theatre", "anfu_rd", "12-12 19:30", 90),
    S("peoples-sq-standup", "人民广场 脱口秀专场", "人民广场附近剧场的脱口秀专场，四位演员各演20分钟。", "comedy", "peoples_sq", "12-11 20:00", 200),
    S("xintiandi-standup", "新天地 周二脱口秀", "新天地小剧场的周二脱口秀，新老演员混搭，氛围轻松。", "comedy", "xintiandi", "12-08 20:00", 80),
    S("bund-immersive", "外滩 沉浸式戏剧《外滩往事》", "在外滩源老楼里边走边看的沉浸式戏剧，每场限60人。", "theatre", "bund", "12-20 19:30", 60),
    S("changning-film", "长宁来福士 周五电影夜", "长宁来福士的放映厅，周五晚放映一部经典港片，映后交流。", "film", "raffles_changning", "12-04 19:30", 80),
    # ---- exhibitions / lectures / reading ----
    S("pudong-museum-tour", "浦东美术馆 特展导览", "跟着讲解员看浦东美术馆的年度特展，约一个半小时。", "exhibition", "pudong_museum", "12-12 14:00", 30),
    S("rockbund-opening", "外滩美术馆 当代艺术展 开幕导览", "外滩美术馆新展开幕，策展人带看当代装置作品。", "exhibition", "bund", "12-13 15:00", 40),
    S("sh-museum-bronze", "上海博物馆 青铜馆专家导览", "上海博物馆人民广场馆青铜馆，研究员带看镇馆青铜器。", "exhibition", "sh_museum", "12-12 10:00", 40),
    S("china-art-haipai", "中华艺术宫 海派绘画展导览", "中华艺术宫的海派绘画展，讲解员带看任伯年、吴昌硕等作品。", "exhibition", "china_art", "12-05 10:00", 40),
    S("long-museum-tour", "龙美术馆 特展导览", "龙美术馆西岸馆的特展导览，清水混凝土大厅里看当代绘画。", "exhibition", "long_museum", "12-06 14:00", 30),
    S("westbund-museum-talk", "西岸美术馆 馆藏讲座：现代主义的一百年", "西岸美术馆报告厅的讲座，结合馆藏讲现代主义艺术。", "lecture", "westbund_museum", "12-09 19:00", 100),
    S("xujiahui-library-art", "徐家汇书院 艺术讲座：印象派的光", "徐家汇书院的周末艺术讲座，从莫奈讲到修拉。", "lecture", "xujiahui_library", "12-05 14:00", 80),
    S("shangsheng-design", "上生·新所 设计展", "上生新所老建筑里的年度设计展，家具、灯具和平面设计。", "exhibition", "shangsheng", "12-12 13:00", 50),
    S("fudan-lecture", "复旦 通识讲座：城市与记忆", "复旦大学的公开通识讲座，讲上海的城市更新与集体记忆，校外可预约。", "lecture", "fudan", "12-08 19:00", 150),
    S("duolun-talk", "多伦路 左联纪念馆 讲座", "左联会址纪念馆的周末讲座，讲三十年代上海的文学圈。", "lecture", "duolun", "12-06 14:00", 50),
    S("luxun-reading", "鲁迅纪念馆 读书会", "鲁迅纪念馆的读书会，本期共读《朝花夕拾》。", "book_club", "luxun_park", "12-10 19:00", 30),
    S("lujiazui-english-bookclub", "English Book Club @ Lujiazui", "A small English-language book club in a riverside cafe. This month: a short novel of your choice. 陆家嘴江边咖啡馆的英文读书会。", "book_club", "lujiazui", "12-06 15:00", 15, "english"),
    S("pudong-library-reading", "上图东馆 周末读书会", "上海图书馆东馆的周末读书会，本期聊科幻小说。", "book_club", "pudong_library", "12-05 14:00", 30),
    S("zj-science-talk", "张江科学会堂 科普夜谈：AI 与我们", "张江科学会堂的晚间科普讲座，研究员聊人工智能的日常应用。", "lecture", "zj_science_hall", "12-09 19:00", 200),
    S("zj-weekend-talk", "张江科学会堂 周末科普讲座：芯片是怎么造出来的", "张江科学会堂的周末科普讲座，适合对科技好奇的成年人。", "lecture", "zj_science_hall", "12-06 14:00", 150),
    S("sinan-reading", "思南读书会", "思南公馆的老牌读书会，作家现场对谈，可以在老洋房里待一下午。", "book_club", "sinan", "12-05 14:00", 40),
    # ---- photo / citywalk / outdoor ----
    S("bund-architecture-photo", "外滩 建筑摄影漫步", "沿外滩源拍万国建筑，摄影师讲构图和光线，免费参加。", "photo_walk", "bund", "12-06 10:00", 20, "free"),
    S("laochangfang-portrait", "1933老场坊 人像摄影练习", "在1933老场坊的廊桥和天井练人像摄影，互为模特。", "photo_walk", "laochangfang", "12-06 14:00", 15),
    S("yangpu-sunset-photo", "杨浦滨江 日落摄影", "杨浦滨江老码头和塔吊剪影下拍日落，免费参加。", "photo_walk", "yangpu_binjiang", "12-05 16:00", 20, "free"),
    S("duolun-street-photo", "多伦路 街拍", "多伦路一带的街头摄影练习，拍老街和人。", "photo_walk", "duolun", "12-19 14:00", 20),
    S("lujiazui-night-photo", "陆家嘴 夜景摄影", "陆家嘴天桥和滨江的夜景摄影，教长曝光。", "photo_walk", "lujiazui", "12-05 18:00", 20),
    S("duolun-citywalk", "多伦路文化名人街 citywalk", "走多伦路、山阴路，看名人故居和石库门，免费讲解。", "citywalk", "duolun", "12-06 10:00", 25, "free"),
    S("northbund-walk", "北外滩滨江 公益健步走", "沿北外滩滨江慢慢走5公里，社区组织，免费。", "citywalk", "north_bund", "12-06 09:30", 60, "free"),
    S("bund-free-citywalk", "外滩万国建筑 免费讲解漫步", "志愿者讲解外滩万国建筑群的历史，慢走一个半小时，免费。", "citywalk", "bund", "12-05 14:00", 30, "free"),
    S("bund-countdown", "外滩 跨年倒数", "外滩滨江跨年倒数活动，人非常多，需提前预约入场。", "festival", "bund", "12-31 22:00", 2000, "free"),
    S("sheshan-hike", "Expat Hiking Trip: 佘山徒步", "English-speaking group hike in Sheshan forest park, about 12 km, bus from downtown included. 佘山徒步一日。", "hiking", "sheshan", "12-06 09:00", 30, "english"),
    S("century-stargazing", "世纪公园 冬夜观星", "天文爱好者带望远镜在世纪公园看冬季星空，讲猎户座。", "stargazing", "century_park", "12-10 19:00", 30),
    # ---- sport ----
    S("qiantan-run-10k", "前滩 周六晨跑 10K", "前滩滨江的周六晨跑，10公里，配速5分半，适合有基础的跑者。", "run_club", "qiantan", "12-05 07:00", 50),
    S("expo-park-run", "世博文化公园 晨跑", "世博文化公园里绕湖晨跑6公里，新手友好。", "run_club", "expo_park", "12-05 08:00", 40),
    S("xujiahui-park-run", "徐家汇公园 晨跑打卡", "徐家汇公园晨跑打卡，5公里，跑完一起喝咖啡。", "run_club", "xujiahui_park", "12-05 07:00", 30),
    S("westbund-trail-cancelled", "西岸 周六越野跑", "徐汇滨江的越野跑练习（因场地原因取消）。", "run_club", "westbund", "12-05 08:00", 30, status="cancelled"),
    S("huamu-night-run", "花木 夜跑", "从上图东馆出发绕花木地区夜跑5公里。", "run_club", "pudong_library", "12-04 19:00", 40),
    S("zj-wed-run", "张江 周三夜跑", "张江科学城的周三夜跑，5公里，下班后来。", "run_club", "zhangjiang", "12-09 19:30", 40),
    S("zj-badminton", "张江 羽毛球约球局", "张江的羽毛球馆包场，按水平分组轮换上场。", "ball", "zhangjiang", "12-05 19:00", 16, tags=["羽毛球"]),
    S("jinqiao-basketball", "金桥 篮球夜场", "金桥室内篮球馆的夜场约球，全场5v5。", "ball", "jinqiao", "12-05 19:00", 20, tags=["篮球"]),
    S("changfeng-frisbee", "长风公园 飞盘友谊赛", "长风公园草坪的飞盘友谊赛，新手老手混编。", "frisbee", "changfeng", "12-20 14:00", 30),
    S("ecnu-frisbee", "华师大 飞盘训练营", "华东师大操场的飞盘训练，练传盘和跑位。", "frisbee", "ecnu", "12-26 14:00", 30),
    S("xujiahui-park-frisbee", "徐家汇公园 飞盘体验", "徐家汇公园草坪的飞盘体验，教练带玩。", "frisbee", "xujiahui_park", "12-20 14:00", 24),
    S("qiantan-park-yoga", "前滩公园 户外瑜伽", "前滩休闲公园草坪上的户外流瑜伽，一小时。", "yoga", "qiantan_park", "12-06 14:00", 25, "outdoor"),
    S("westbund-sunset-yoga", "西岸 日落瑜伽", "在徐汇滨江的草坪上看着日落练瑜伽。", "yoga", "westbund", "12-06 16:00", 25, "outdoor"),
    S("century-yoga", "世纪公园 草坪瑜伽", "世纪公园草坪上的周日下午瑜伽课。", "yoga", "century_park", "12-06 14:00", 30, "outdoor"),
    S("qiantan-meditation", "前滩 正念冥想工作坊", "前滩太古里的正念冥想工作坊，90分钟，学呼吸和身体扫描。", "meditation", "qiantan", "12-06 15:00", 20),
    S("xujiahui-soundbath", "徐家汇 颂钵冥想", "徐家汇的颂钵疗愈冥想，躺着听一小时。", "meditation", "xujiahui", "12-06 14:00", 15),
    S("westbund-skate", "徐汇滨江 滑板入门", "徐汇滨江滑板公园的入门课，提供滑板和护具。", "skate", "westbund", "12-05 15:00", 12),
    S("westbund-climb", "西岸梦中心 攀岩体验", "西岸梦中心的室内攀岩馆，新手体验抱石。", "climbing", "westbund_dream", "12-08 19:00", 16),
    S("stadium-badminton", "上海体育场 羽毛球约球", "上海体育场羽毛球馆的晚场约球，双打轮换。", "ball", "stadium", "12-09 19:00", 16, tags=["羽毛球"]),
    S("julu-swing", "Swing Dance Social 摇摆舞之夜", "English-friendly swing dance social on Julu Road, free beginner lesson at 8pm. 巨鹿路的摇摆舞社交舞会，八点有免费入门课。", "dance", "julu_rd", "12-05 20:00", 60, "english"),
    S("raffles-salsa", "长宁 周五 Salsa 之夜", "长宁来福士舞蹈室的 Salsa 社交夜，先上一小时入门课。", "dance", "raffles_changning", "12-04 20:00", 40),
    S("lujiazui-frisbee", "陆家嘴滨江 飞盘局", "陆家嘴滨江草坪的周六飞盘局，新手友好。", "frisbee", "lujiazui", "12-05 14:00", 30),
    S("dongchang-badminton", "东昌路 羽毛球约球", "东昌路附近羽毛球馆的周日上午约球。", "ball", "dongchang", "12-06 10:00", 16, tags=["羽毛球"]),
    S("century-ride", "世纪公园 周末骑行", "从世纪公园出发，沿浦东绿道骑行15公里。", "cycling", "century_park", "12-05 09:30", 30),
    S("huangxing-family-ride", "黄兴公园 亲子骑行", "黄兴公园里的亲子骑行，大人孩子一起骑，5公里慢骑。", "cycling", "huangxing_park", "12-05 10:00", 30, "kids"),
    S("gongqing-ride", "共青森林公园 环园骑行", "在共青森林公园里环园骑行，林间小路。", "cycling", "gongqing", "12-05 10:00", 30),
    S("northbund-ride", "北外滩 滨江骑行", "从北外滩出发沿滨江骑到杨浦，往返25公里。", "cycling", "north_bund", "12-12 09:30", 30),
    S("chongming-ride", "崇明 环岛骑行一日", "坐车去崇明，在东平森林公园周边骑行40公里。", "cycling", "chongming", "12-05 08:00", 30),
    S("binjiang-forest-ride", "滨江森林公园 骑行", "在吴淞口的滨江森林公园里骑行，看长江入海口。", "cycling", "binjiang_forest", "12-06 09:00", 30),
    # ---- workshops ----
    S("tianzifang-leather", "田子坊 皮具手作工作坊", "在田子坊的皮具工作室做一个卡包，手缝，三小时。", "handcraft", "tianzifang", "12-06 14:00", 10),
    S("sinan-latte-art", "思南 咖啡拉花课", "思南公馆咖啡馆的拉花入门课，每人打十杯奶泡。", "coffee_tea", "sinan", "12-05 15:00", 10),
    S("anfu-silver", "安福路 银饰手作", "安福路银饰工作室做一枚戒指，敲打、焊接、抛光。", "handcraft", "anfu_rd", "12-12 14:00", 8),
    S("bund-oil-painting", "外滩 油画体验课", "外滩源画室的油画体验，老师带画一幅外滩小风景。", "painting", "bund", "12-05 14:00", 12, "indoor"),
    S("ifc-perfume", "陆家嘴 调香工作坊", "国金中心调香工作室，调一瓶自己的香水。", "handcraft", "ifc", "12-05 15:00", 10),
    S("westbund-plein-air", "西岸 户外写生", "在徐汇滨江的江边写生，水彩或素描，自带画具。", "painting", "westbund", "12-13 10:00", 20, "outdoor"),
    S("gubei-gingerbread", "古北 圣诞姜饼屋烘焙课", "古北烘焙教室的圣诞姜饼屋课，亲子可一起参加。", "cooking", "gubei", "12-06 14:00", 12, "kids"),
    S("qibao-benbang", "七宝 本帮菜体验课", "七宝古镇老饭店后厨的本帮菜体验，学做红烧肉。", "cooking", "qibao", "12-06 10:00", 12),
    S("hongqiao-pasta", "虹桥天地 手工意面课", "虹桥天地意大利餐厅的手工意面课，从揉面开始。", "cooking", "hongqiao", "12-06 14:00", 12),
    S("xujiahui-western", "徐家汇 西餐料理课", "徐家汇料理教室的西餐课，牛排和奶油蘑菇汤。", "cooking", "xujiahui", "12-05 14:00", 12),
    S("xujiahui-kids-baking-full", "徐家汇 亲子烘焙课", "徐家汇烘焙教室的亲子饼干课（已报满）。", "cooking", "xujiahui", "12-05 10:00", 12, "kids", cur=12),
    S("qibao-tea", "七宝老街 茶艺体验", "七宝老街茶馆里学泡功夫茶，品三款乌龙。", "coffee_tea", "qibao", "12-05 14:00", 12),
    S("xianxia-washoku", "仙霞路 和食料理教室（日本語）", "日本人の先生による和食教室、日本語で進行。仙霞路的日式家常菜课，日语授课。", "cooking", "xianxia", "12-08 19:00", 10, "japanese"),
    S("tianshan-sado", "天山路 茶道体験（日本語）", "天山路の茶室で裏千家の茶道体験。天山路茶室的日本茶道体验，日语讲解。", "coffee_tea", "tianshan", "12-13 14:00", 8, "japanese"),
    S("qiantan-tea", "前滩 宋式点茶体验", "前滩太古里茶空间的宋式点茶体验，安静的一个下午。", "coffee_tea", "qiantan", "12-10 14:00", 10),
    # ---- social ----
    S("jingan-nihongo", "静安 日语角", "静安寺附近咖啡馆的日语角，中日朋友一起聊天。", "language_exchange", "jingan_temple", "12-06 15:00", 20, "japanese"),
    S("anfu-english-boardgame", "Board Game Night in English @ Anfu Road", "Friendly board game night in English at a cafe on Anfu Road; newcomers welcome. 安福路咖啡馆的英文桌游夜。", "boardgame", "anfu_rd", "12-06 19:00", 24, "english"),
    S("ganghui-werewolf", "港汇 周末狼人杀", "港汇楼上桌游馆的周末狼人杀局，法官带新手。", "boardgame", "ganghui", "12-12 14:00", 12),
    S("caohejing-boardgame", "漕河泾 周末桌游", "漕河泾的桌游吧周末局，以德式策略为主。", "boardgame", "caohejing", "12-13 14:00", 16),
    S("shangsheng-boardgame", "上生·新所 桌游下午", "上生新所咖啡馆的桌游下午，轻松的聚会游戏。", "boardgame", "shangsheng", "12-12 15:00", 16),
    S("tianshan-jbs", "天山路 剧本杀 欢乐本", "天山路剧本杀店的欢乐本，不烧脑，适合第一次玩。", "murder_mystery", "tianshan", "12-04 19:30", 7),
    S("zj-boardgame", "张江 下班桌游夜", "张江科学城写字楼旁的桌游吧，下班后来一局。", "boardgame", "zhangjiang", "12-10 19:30", 16),
    # ---- family ----
    S("science-museum-lab", "上海科技馆 亲子科学实验课", "上海科技馆的亲子实验课，做静电和简单电路实验，适合6-12岁。", "kids_science", "science_museum", "12-05 10:00", 20),
    S("pudong-library-story", "上图东馆 儿童绘本故事会", "上海图书馆东馆少儿区的绘本故事会，适合3-6岁。", "kids_story", "pudong_library", "12-06 10:00", 25),
    S("zj-kids-coding", "张江 亲子编程体验", "张江科学会堂的亲子图形化编程体验，做一个小游戏。", "kids_science", "zj_science_hall", "12-05 14:00", 20),
    S("disney-xmas", "迪士尼小镇 圣诞亲子游园", "迪士尼小镇的圣诞亲子游园活动，有手作摊位和巡游。", "festival", "disney", "12-05 10:00", 300, "kids kids_only"),
    S("century-kids-wreath", "世纪公园 亲子圣诞花环手作", "用世纪公园里捡的松果和枝条做圣诞花环，亲子参加。", "kids_craft", "century_park", "12-20 10:00", 20),
    S("xujiahui-library-story", "徐家汇书院 亲子绘本会", "徐家汇书院少儿区的亲子绘本共读。", "kids_story", "xujiahui_library", "12-05 10:00", 25),
    S("botanical-kids", "上海植物园 亲子自然课", "上海植物园温室里的亲子自然课，认识热带植物。", "kids_nature", "botanical", "12-06 10:00", 20),
    S("zoo-keeper", "上海动物园 小小饲养员", "跟着饲养员给动物准备食物，了解动物习性，适合5-10岁。", "kids_nature", "zoo", "12-05 09:30", 20),
    S("longhua-kids-craft", "龙华寺 亲子非遗手作", "龙华寺旁的非遗工作坊，亲子一起做兔子灯。", "kids_craft", "longhua", "12-06 14:00", 20),
    S("century-kids-market", "世纪公园 亲子跳蚤市集", "孩子们摆摊卖旧玩具和绘本，家长陪同，世纪公园草坪。", "market", "century_park", "12-05 13:00", 60, "kids"),
    # ---- community ----
    S("gubei-market", "古北 周末市集", "古北黄金城道的周末市集，手作、咖啡和面包摊位。", "market", "gubei", "12-05 11:00", 80),
    S("northbund-market", "北外滩 滨江市集", "北外滩滨江的大型周末市集，摊位多，人很多。", "market", "north_bund", "12-05 11:00", 300, "free"),
    S("zhongshan-pet", "中山公园 狗狗社交日", "带上狗狗在中山公园草坪认识新朋友，训犬师现场答疑。", "pets", "zhongshan_park", "12-06 10:00", 40, tags=["遛狗"]),
    S("daxue-market", "大学路 周末创意市集", "大学路的周末创意市集，学生手作和独立出版物。", "market", "daxue_rd", "12-06 13:00", 80),
    S("gucun-market", "顾村公园 冬日户外市集", "顾村公园的冬日户外市集，露营装备和咖啡摊。", "market", "gucun", "12-05 11:00", 90),
    S("m50-volunteer", "苏州河畔 垃圾分类宣传志愿者", "M50旁的苏州河步道，做垃圾分类宣传和捡拾，志愿活动。", "volunteer", "m50", "12-12 10:00", 30),
    S("westbund-cleanup", "徐汇滨江 河岸清洁志愿行动", "在徐汇滨江岸边捡拾垃圾，社区组织，可带孩子参加。", "volunteer", "westbund", "12-06 09:30", 40, "kids"),
]

# --------------------------------------------------------------------------
# 5. Building activities (facets -> JSON)
# --------------------------------------------------------------------------

def local(s):
    """'MM-DD HH:MM' Shanghai local -> aware datetime (Dec = 2026, Jan = 2027)."""
    md, hm = s.split()
    m, d = map(int, md.split("-"))
    hh, mm = map(int, hm.split(":"))
    return datetime(2026 if m == 12 else 2027, m, d, hh, mm, tzinfo=SHANGHAI)


def utc(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def iso(dt):
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def haversine(lat1, lng1, lat2, lng2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lng2 - lng1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_KM * math.asin(math.sqrt(h))


def stable_int(s):
    return int(hashlib.md5(s.encode("utf-8")).hexdigest(), 16)


def expand():
    """All activities as internal records (facets kept beside the JSON)."""
    acts = []
    for s in SERIES:
        for i, when in enumerate(s["dates"]):
            note = s["notes"][i] if i < len(s["notes"]) else ""
            acts.append(dict(key=f'{s["key"]}#{i + 1}', series=s["key"],
                             title=s["title"].format(n=s["first"] + i),
                             desc=s["desc"].format(note=note).strip(),
                             kind=s["kind"], place=s["place"], when=when, max=s["max"],
                             attrs=s["attrs"], status="active", cur=None,
                             tags=s.get("tags", [])))
    for a in SINGLES:
        acts.append(dict(a, series=None))
    for a in acts:
        typ, base_tags, default_attrs = KINDS[a["kind"]]
        attrs = set(default_attrs.split()) | set(a["attrs"].split())
        if "indoor" in a["attrs"].split():
            attrs.discard("outdoor")
        if "outdoor" in a["attrs"].split():
            attrs.discard("indoor")
        start = local(a["when"])
        h = start.hour
        if h >= 18:
            attrs.add("night")
        if h < 9:
            attrs.add("morning")
        if 12 <= h < 18:
            attrs.add("afternoon")
        if a["max"] >= 100:
            attrs.add("crowded")
        name, lat, lng, museum = PLACES[a["place"]]
        if museum:
            attrs.add("at_museum")
        a["type"] = typ
        a["attrset"] = attrs
        a["start"] = start
        a["lat"], a["lng"], a["locname"] = lat, lng, name
        if a["cur"] is None:
            a["cur"] = stable_int(a["key"]) % max(1, int(a["max"] * 0.7))
        tags = list(base_tags) + list(a["tags"])
        tags += [ATTR_TAGS[t] for t in sorted(attrs) if t in ATTR_TAGS]
        seen = []
        for t in tags:
            if t not in seen:
                seen.append(t)
        a["tagout"] = seen
    # ids: a seeded shuffle so that id order does not reveal series or query
    keys = [a["key"] for a in acts]
    assert len(keys) == len(set(keys)), "duplicate activity key"
    order = list(range(len(acts)))
    random.Random(20261203).shuffle(order)
    for n, idx in enumerate(order, 1):
        acts[idx]["id"] = f"nb-{n:03d}"
    return acts


# --------------------------------------------------------------------------
# 6. GRADING RULES
# --------------------------------------------------------------------------

def rule_match(rule, a):
    if rule["kinds"] is not None and a["kind"] not in rule["kinds"]:
        return False
    if a["kind"] in rule["not_kinds"]:
        return False
    if not rule["attrs"] <= a["attrset"]:
        return False
    if rule["no_attrs"] & a["attrset"]:
        return False
    return True


def dislike_match(dl, a):
    return (a["kind"] in dl["kinds"] or bool(dl["attrs"] & a["attrset"])
            or bool(dl["lacks"] - a["attrset"]))


def query_point(q):
    """The user's position: the named place, or an explicit `at` override."""
    if "at" in q:
        return q["at"]
    return PLACES[q["near"]][1], PLACES[q["near"]][2]


def query_times(q):
    now = utc(q.get("now", NOW))
    win = q.get("window")
    if win:
        ws = now if win[0] == "now" else local(win[0])
        we = local(win[1])
        return now, (ws, we)
    return now, None


def grace(win):
    length = win[1] - win[0]
    return timedelta(0) if length < GRACE_MIN else min(GRACE_MAX, length)


def grade(q, a, by_key, dd=0.0, dt=timedelta(0)):
    """Return (grade or None, reason).  dd / dt nudge the distance and start
    time; they are used only by the threshold-margin check."""
    now, win = query_times(q)
    start = a["start"] + dt
    if a["status"] != "active":
        return None, "not active"
    if a["cur"] >= a["max"]:
        return None, "full"
    if start <= now:
        return None, "already started"
    d = haversine(*query_point(q), a["lat"], a["lng"]) + dd
    if d > q["radius"]:
        return None, f"outside radius ({d:.1f} km)"
    turned = q.get("turned", [])
    if a["key"] in turned:
        return None, "turned down"
    tk = {by_key[k]["kind"] for k in turned}
    ts = {by_key[k]["series"] for k in turned if by_key[k]["series"]}
    if a["kind"] in tk or (a["series"] and a["series"] in ts):
        return None, "look-alike of turned down"
    for dl in q.get("dislikes", []) + q.get("avoid", []):
        if dislike_match(dl, a):
            return None, "dislike/avoid: " + (dl["text"] or "stated in wish")
    if any(rule_match(r, a) for r in q["full"]):
        fit = 2
    elif any(rule_match(r, a) for r in q.get("partial", [])):
        fit = 1
    else:
        return None, "off topic"
    place = 2 if d <= q["radius"] / 2 else 1
    if win:
        ws, we = win
        if ws <= start < we:
            tg = 2
        elif grace(win) > timedelta(0) and start < we + grace(win):
            tg = 1
        else:
            return None, "too far from the asked time"
    else:
        tg = 2 if start < now + SOON else 1
    g = min(fit, place, tg)
    return g, f"fit={fit} place={place} ({d:.1f} km) time={tg}"


def margin_problems(q, a, by_key):
    """A grade must not change if the distance moves by DIST_MARGIN or the
    start time by TIME_MARGIN (guards against formula / clock differences)."""
    g0, _ = grade(q, a, by_key)
    probs = []
    for dd, dt in ((DIST_MARGIN, timedelta(0)), (-DIST_MARGIN, timedelta(0)),
                   (0.0, TIME_MARGIN), (0.0, -TIME_MARGIN)):
        g, why = grade(q, a, by_key, dd, dt)
        if g != g0:
            probs.append(f"{q['id']} {a['key']}: grade {g0} -> {g} when nudged "
                         f"({dd:+.1f} km, {int(dt.total_seconds() / 60):+d} min); {why}")
    return probs


# --------------------------------------------------------------------------
# 7. WRITING
# --------------------------------------------------------------------------

def main(argv):
    acts = expand()
    by_key = {a["key"]: a for a in acts}
    for q in QUERIES:
        assert q["near"] in PLACES, q["id"]
        assert 5 <= q["radius"] <= 20, q["id"]
        for k in q.get("turned", []):
            assert k in by_key, (q["id"], k)
    for a in acts:
        assert a["place"] in PLACES and a["kind"] in KINDS, a["key"]
        assert local("12-04 00:00") <= a["start"] <= local("01-03 23:59"), a["key"]

    problems = []
    graded = {}
    for q in QUERIES:
        rel = {}
        for a in acts:
            g, _ = grade(q, a, by_key)
            problems += margin_problems(q, a, by_key)
            if g:
                rel[a["id"]] = g
        graded[q["id"]] = dict(sorted(rel.items(), key=lambda kv: (-kv[1], kv[0])))

    if len(argv) > 2 and argv[1] == "--explain":
        q = next(x for x in QUERIES if x["id"] == argv[2])
        print(q["id"], q["query"], "radius", q["radius"], "now", q.get("now", NOW))
        rows = []
        for a in acts:
            g, why = grade(q, a, by_key)
            d = haversine(*query_point(q), a["lat"], a["lng"])
            on = any(rule_match(r, a) for r in q["full"] + q.get("partial", []))
            if g or (on and d <= q["radius"] + 6) or a["key"] in q.get("turned", []):
                rows.append((-(g or 0), d, a["id"], a["key"], a["when"], g, why))
        for r in sorted(rows):
            print(f"  {r[2]} {r[3]:28s} {r[4]}  grade={r[5]}  {r[6]}")
        return

    if problems:
        print("threshold margin problems:\n  " + "\n  ".join(problems))
        sys.exit(1)

    with open(os.path.join(HERE, "activities.jsonl"), "w", encoding="utf-8") as f:
        for a in sorted(acts, key=lambda x: x["id"]):
            rec = {"id": a["id"], "title": a["title"], "description": a["desc"],
                   "type": a["type"], "tags": a["tagout"], "startAt": iso(a["start"]),
                   "locationName": a["locname"],
                   "location": {"lat": a["lat"], "lng": a["lng"]},
                   "status": a["status"], "currentParticipants": a["cur"],
                   "maxParticipants": a["max"]}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "series.jsonl"), "w", encoding="utf-8") as f:
        for a in sorted(acts, key=lambda x: x["id"]):
            if a["series"]:
                f.write(json.dumps({"id": a["id"], "series": a["series"]}, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "queries.jsonl"), "w", encoding="utf-8") as f:
        for q in QUERIES:
            lat, lng = query_point(q)
            rec = {"id": q["id"], "query": q["query"], "kind": q["kind"], "split": q["split"],
                   "near": {"lat": lat, "lng": lng}, "radiusKm": q["radius"],
                   "now": q.get("now", NOW),
                   "turnedDown": [by_key[k]["id"] for k in q.get("turned", [])],
                   "dislikes": [d["text"] for d in q.get("dislikes", [])],
                   "relevant": graded[q["id"]]}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")

    # ---- summary ----
    n_series = len({a["series"] for a in acts if a["series"]})
    n_members = sum(1 for a in acts if a["series"])
    print(f"activities: {len(acts)} ({len(acts) - n_members} singletons, "
          f"{n_members} series members in {n_series} series)")
    print(f"queries: {len(QUERIES)}")
    for kind in ("place_time", "different", "not_for_me"):
        row = [q for q in QUERIES if q["kind"] == kind]
        t = sum(1 for q in row if q["split"] == "tune")
        print(f"  {kind:11s} {len(row):2d}  tune {t:2d}  holdout {len(row) - t:2d}")
    for split in ("tune", "holdout"):
        row = [q for q in QUERIES if q["split"] == split]
        print(f"  {split:11s} {len(row):2d}")
    rels = [graded[q["id"]] for q in QUERIES]
    print(f"mean relevant per query: {sum(map(len, rels)) / len(rels):.1f} "
          f"(grade 2: {sum(sum(1 for g in r.values() if g == 2) for r in rels) / len(rels):.1f}, "
          f"grade 1: {sum(sum(1 for g in r.values() if g == 1) for r in rels) / len(rels):.1f})")
    for kind in ("place_time", "different", "not_for_me"):
        row = [graded[q["id"]] for q in QUERIES if q["kind"] == kind]
        print(f"  {kind:11s} mean relevant {sum(map(len, row)) / len(row):.1f}  "
              f"min {min(map(len, row))}  max {max(map(len, row))}")
    empty2 = [q["id"] for q in QUERIES if 2 not in graded[q["id"]].values()]
    if empty2:
        print("queries without a grade-2 activity:", ", ".join(empty2))


if __name__ == "__main__":
    main(sys.argv)
