// examples.js: the example gallery: a few programs per language that show what the service can do
// (numpy, files kept in a session, tests through evaluate, C reading its input), each loadable
// into the editor with its input or its test cases.
import { $, el } from './ui.js';

/**
 * Each example: id, language (the service's id), title, what (one sentence), code, and either
 * stdin (for the Input box) or tests: {kind: 'stdio' | 'io', cases: [[input, expected]...],
 * entry_point?, compare?} for the Tests panel.
 */
export const EXAMPLES = [
  {
    id: 'python-input', language: 'python', title: 'Read input with input()',
    what: 'Each input() call reads one line of the Input box.',
    stdin: 'Ada\n36\n',
    code: `name = input("Your name? ")
age = int(input("Your age? "))
print()
print(f"Hello, {name}! In ten years you will be {age + 10}.")
`,
  },
  {
    id: 'python-numpy', language: 'python', title: 'numpy: solve equations, sample statistics',
    what: 'Linear algebra and random numbers with numpy (also installed: pandas, scipy, sympy).',
    stdin: '',
    code: `import numpy as np

# Solve  3x + y = 9,  x + 2y = 8.
A = np.array([[3.0, 1.0], [1.0, 2.0]])
b = np.array([9.0, 8.0])
x = np.linalg.solve(A, b)
print("solution:", x)
print("A @ x == b:", np.allclose(A @ x, b))

rng = np.random.default_rng(seed=1)
sample = rng.normal(loc=10, scale=2, size=10_000)
print(f"mean {sample.mean():.2f}, standard deviation {sample.std():.2f}")
`,
  },
  {
    id: 'python-files', language: 'python', title: 'Files that stay: a session',
    what: 'Start a session (New session, on the right) and run this twice: runs.txt keeps growing. Without a session every run starts empty.',
    stdin: '',
    code: `from pathlib import Path

log = Path("runs.txt")
count = len(log.read_text().splitlines()) + 1 if log.exists() else 1
with log.open("a") as f:
    f.write(f"run {count}\\n")

print(f"This is run {count}. Files here now:")
for p in sorted(Path(".").iterdir()):
    print(f"  {p.name:12} {p.stat().st_size:6} bytes")
`,
  },
  {
    id: 'python-tests', language: 'python', title: 'Tests: stdin in, stdout checked',
    what: 'Fills the Tests panel with cases; Run tests runs each in its own sandbox and compares the output.',
    tests: { kind: 'stdio', compare: 'lines', cases: [['1 2', '3'], ['10 -4', '6'], ['20 22', '42']] },
    code: `a, b = map(int, input().split())
print(a + b)
`,
  },
  {
    id: 'python-function-tests', language: 'python', title: 'Tests: call a function',
    what: 'Function cases: arguments in, the return value compared with the expected Python value.',
    tests: { kind: 'io', entry_point: 'is_palindrome',
      cases: [['s="racecar"', 'True'], ['s="Never odd or even"', 'True'], ['s="sandbox"', 'False']] },
    code: `def is_palindrome(s):
    letters = [c.lower() for c in s if c.isalnum()]
    return letters == letters[::-1]
`,
  },
  {
    id: 'c-input', language: 'c', title: 'C: numbers from the input',
    what: 'Reads a count and that many integers with scanf, then prints their sum and largest.',
    stdin: '5\n3 1 4 1 5\n',
    code: `#include <stdio.h>

int main(void) {
    int n;
    if (scanf("%d", &n) != 1 || n <= 0) {
        fprintf(stderr, "expected a count, then that many integers\\n");
        return 1;
    }
    long sum = 0;
    int max = 0;
    for (int i = 0; i < n; i++) {
        int x;
        if (scanf("%d", &x) != 1) {
            fprintf(stderr, "only %d of %d numbers given\\n", i, n);
            return 1;
        }
        sum += x;
        if (i == 0 || x > max) max = x;
    }
    printf("%d numbers: sum %ld, largest %d\\n", n, sum, max);
    return 0;
}
`,
  },
  {
    id: 'cpp-words', language: 'cpp', title: 'C++: count words',
    what: 'Reads words from the input into a std::map and prints how often each occurs.',
    stdin: 'the cat sat on the mat\nthe end\n',
    code: `#include <iostream>
#include <map>
#include <string>

int main() {
    std::map<std::string, int> count;
    std::string word;
    while (std::cin >> word) count[word]++;
    for (const auto &[w, n] : count) std::cout << w << ' ' << n << '\\n';
}
`,
  },
  {
    id: 'bash-pipes', language: 'bash', title: 'Bash: loops and pipes',
    what: 'Reads the input line by line, then counts its words with tr, sort and uniq.',
    stdin: 'red green\nblue red\nred\n',
    code: `input=$(cat)
n=0
while IFS= read -r line; do
    n=$((n + 1))
    echo "line $n: $line"
done <<< "$input"
echo "most common words:"
tr -s ' ' '\\n' <<< "$input" | sort | uniq -c | sort -rn | head -3
`,
  },
  {
    id: 'node-json', language: 'node', title: 'Node.js: JSON from the input',
    what: 'Parses JSON from standard input and prints a summary.',
    stdin: '[{"name": "ada", "score": 90}, {"name": "alan", "score": 85}, {"name": "grace", "score": 97}]\n',
    code: `const fs = require("fs");

const people = JSON.parse(fs.readFileSync(0, "utf8"));
const best = people.reduce((a, b) => (b.score > a.score ? b : a));
const mean = people.reduce((s, p) => s + p.score, 0) / people.length;
console.log(\`\${people.length} people, mean score \${mean.toFixed(1)}\`);
console.log(\`best: \${best.name} (\${best.score})\`);
`,
  },
];

/**
 * Wire the gallery dialog. ctx: {languages() -> [{id}], names: {id: label}, load(example)}.
 * Only languages the service offers are listed; the list is rebuilt on each opening.
 */
export function initExamples(ctx) {
  const dialog = $('examples-dialog');
  function fill() {
    const offered = ctx.languages().map((l) => l.id);
    const groups = [];
    for (const id of offered) {
      const list = EXAMPLES.filter((x) => x.language === id);
      if (!list.length) continue;
      groups.push(el('section', { class: 'example-group', 'aria-labelledby': `examples-${id}` },
        el('h3', { id: `examples-${id}`, text: ctx.names[id] || id }),
        el('ul', {}, list.map((x) => el('li', {},
          el('button', { type: 'button', class: 'example', 'data-example': x.id,
            'aria-describedby': `example-what-${x.id}`,
            onclick: () => { dialog.close(); ctx.load(x); } }, x.title),
          el('p', { id: `example-what-${x.id}`, class: 'help', text: x.what }))))));
    }
    $('examples-list').replaceChildren(...(groups.length ? groups
      : [el('p', { class: 'empty', text: 'The languages are not loaded yet: set the token first.' })]));
  }
  $('examples-button').addEventListener('click', () => {
    fill();
    dialog.showModal();
    const first = dialog.querySelector('button.example');
    (first || $('examples-close')).focus();
  });
  $('examples-close').addEventListener('click', () => dialog.close());
}
