export interface DataTableProps {
  caption: string;
  rowHeader: string;
  rowLabels: readonly string[];
  colLabels: readonly string[];
  /** Text of cell (row, col). */
  cell: (row: number, col: number) => string;
  /** data-testid of cell (row, col), for tests and scripts. */
  cellTestId: (row: number, col: number) => string;
  testId?: string;
}

/** The numbers behind a picture, as a plain table (screen readers, copy-paste, tests). */
export function DataTable({ caption, rowHeader, rowLabels, colLabels, cell, cellTestId, testId }: DataTableProps) {
  return (
    <div className="table-scroll">
      <table className="data-table" data-testid={testId}>
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">{rowHeader}</th>
            {colLabels.map((c, j) => <th key={j} scope="col">{c}</th>)}
          </tr>
        </thead>
        <tbody>
          {rowLabels.map((r, i) => (
            <tr key={i}>
              <th scope="row">{r}</th>
              {colLabels.map((_, j) => <td key={j} data-testid={cellTestId(i, j)}>{cell(i, j)}</td>)}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
