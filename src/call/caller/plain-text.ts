// What the caller said, as plain words for matching phrases: lower case, curly apostrophes straight,
// every run of other punctuation or space one space.
export function plainText(text: string): string {
  return text
    .toLowerCase()
    .replace(/[’]/g, "'")
    .replace(/[^\p{L}\p{N}']+/gu, ' ')
    .trim();
}
