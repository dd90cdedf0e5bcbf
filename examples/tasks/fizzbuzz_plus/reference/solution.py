"""Reference solution for fizzbuzz_plus."""

WORDS = ((3, "Fizz"), (5, "Buzz"), (7, "Bazz"))


def fizzbuzz(n):
    result = []
    for number in range(1, n + 1):
        word = "".join(name for divisor, name in WORDS if number % divisor == 0)
        result.append(word or str(number))
    return result


if __name__ == "__main__":
    print(fizzbuzz(21))
