"""tests/similar_jaccard.py LOG MODEL [DEMO] - how related the demo's --similar neighbours are:
for the 300 items with the most users in LOG (user, item first, whitespace-separated, as
ml-100k's u.data), the mean Jaccard index of an item's users and each of its 10 neighbours'
users (co-visit similarity), beside random items and the 10 most popular. docs/serving.md."""
import csv
import io
import random
import subprocess
import sys
from collections import defaultdict

log, model = sys.argv[1], sys.argv[2]
demo = sys.argv[3] if len(sys.argv) > 3 else "./demo"
users_of = defaultdict(set)
for line in open(log):
    f = line.split()
    users_of[f[1]].add(f[0])
top = sorted(users_of, key=lambda i: (-len(users_of[i]), i))[:300]


def jaccard(a, b):
    return len(users_of[a] & users_of[b]) / len(users_of[a] | users_of[b])


def mean_over(neighbours):
    return sum(sum(jaccard(q, n) for n in ns) / len(ns) for q, ns in neighbours.items()) / len(neighbours)


def similar(q):
    out = subprocess.run([demo, "--load", model, "--similar", q, "--output", "csv"], capture_output=True,
                         text=True, check=True).stdout
    return [row[3] for row in list(csv.reader(io.StringIO(out)))[1:]]


rng = random.Random(0)
everything = sorted(users_of)
print("random items       %.4f" % mean_over({q: rng.sample([i for i in everything if i != q], 10) for q in top}))
print("10 most popular    %.4f" % mean_over({q: [i for i in top[:11] if i != q][:10] for q in top}))
print("%-18s %.4f" % (model, mean_over({q: similar(q) for q in top})))
